//go:build race

package deploy_test

// raceEnabled builds the praetor binary with -race too, so it reuses the
// packages the race-enabled test run has compiled.
const raceEnabled = true
