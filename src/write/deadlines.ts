/**
 * How long a write may wait for its turn before it is answered 503, counted from
 * its own arrival. The record objects and the batches of the Worker both keep to it.
 */
export const TURN_TIMEOUT_MS = 10_000;

/**
 * How long the Worker keeps trying to reach a record's object (sending a call again after a lost
 * answer) before it gives up with 503: the object's own deadline plus time to learn a write's
 * outcome.
 */
export const CALL_DEADLINE_MS = TURN_TIMEOUT_MS + 5_000;
