// Package learn keeps what rota learns about its pools from what it has seen: how far the
// number of servers a pool needs rises over the next minutes and hours (by hour of week, and
// after a rise, by how steep it was), and how long its servers take to boot and to shut down.
//
// The planner stays a pure function of its input: the loop (and the replay, identically)
// feed the statistics each pass with Observe, keep them in the store, and hand the planner a
// View of each pool in the snapshot. Nothing here reads a clock or does I/O.
//
// The one statistic is the rise of need: at every minute (an origin) the need n0 is noted,
// and once the longest horizon has passed, for each horizon h the largest need seen in
// (origin, origin+h] less n0 is counted. Its distribution answers both questions the planner
// asks: how many servers to keep warm so work arriving within one boot finds one (a quantile
// at the boot time), and how likely an idle server is to be needed within a time if it stays
// on (an idle server k places above need is needed once the need rises by k).
package learn
