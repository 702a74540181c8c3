"""The update check: every cluster step of a program held, exactly, to the step its standalone
trainer takes on the batches the cluster promises to combine (the fourth verdict, `updates`)."""
