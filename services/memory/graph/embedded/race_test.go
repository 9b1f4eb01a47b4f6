//go:build race

package embedded_test

// Under the race detector every memory access of the transpiled SQLite is
// instrumented and a write costs about thirty times more: the concurrency
// test runs 20 rounds of 32 writers instead of 200, which still races every
// code path; the 200-round proof runs without -race.
const concurrencyRounds = 20
