/*
 * kj_ticker.h - a background thread that calls a function every period,
 * or at once when kicked, until it is stopped.
 *
 * The server's lease sweeper and wait-list notifier and the runner's
 * heartbeat are tickers. The callback runs on the ticker's thread without
 * any lock of the ticker held, so it may take its own locks and call
 * kj_ticker_kick; it must not call kj_ticker_stop on its own ticker.
 * Threads exist in both binaries, so a fork() of a process holding a ticker
 * gets none of them: the runner's boxes are such forks (runner/box.h).
 */
#ifndef KJ_TICKER_H
#define KJ_TICKER_H

struct kj_err;
struct kj_ticker;

/* Called once per tick with the arg given to kj_ticker_start. */
typedef void (*kj_ticker_fn)(void *arg);

/* Start a thread calling fn(arg) every period_ms milliseconds (the first
 * call one period after the start). *out: free with kj_ticker_stop().
 * Returns 0, KJ_ENOMEM or KJ_EINTERNAL (the thread could not start). */
int kj_ticker_start(unsigned period_ms, kj_ticker_fn fn, void *arg, const char *name,
                    struct kj_ticker **out, struct kj_err *err);

/* Run the next tick now instead of at the end of the period. Safe from any
 * thread, the callback included. */
void kj_ticker_kick(struct kj_ticker *t);

/* Stop the thread (waiting for a running callback to return) and free t.
 * Accepts NULL. */
void kj_ticker_stop(struct kj_ticker *t);

#endif
