/* Request ids from 64 random bits: a fix for TensorFlow 2.21's duplicate RunGraph aborts.
 *
 * TensorFlow's master gives every RunGraph request an id from tsl::random::ThreadLocalNew64().
 * That function seeds a new per-thread generator with one 32-bit value, and the master runs each
 * client call on a new thread, so each id is one of only 2^32 values. The article's input
 * pipeline makes about 150,000 calls per worker in 1000 steps; a worker remembers the last
 * 100,000 ids, and a repeat is refused as "The same RunGraph (Worker) request was received twice",
 * which kills the queue-runner thread that made the call (about 5 per run).
 *
 * Preloaded into a TensorFlow process (LD_PRELOAD), this definition replaces TensorFlow's, which
 * libtensorflow_cc calls through the PLT: every value is 64 bits from getrandom(2). It needs only
 * libc, so one build serves this machine and the kit's containers alike.
 */
#include <stdint.h>
#include <sys/random.h>

uint64_t _ZN3tsl6random16ThreadLocalNew64Ev(void) {  /* tsl::random::ThreadLocalNew64() */
    uint64_t value = 0;
    while (getrandom(&value, sizeof value, 0) != (ssize_t) sizeof value) {
    }
    return value;
}
