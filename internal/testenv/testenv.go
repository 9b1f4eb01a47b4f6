// Package testenv gives tests the real servers they need: the endpoint from the
// environment when set, a testcontainers container when a Docker engine is
// available, otherwise a skip that names the variable to set. With
// PRAETOR_REQUIRE_SERVICES=1 (as in CI) a missing server fails the test
// instead of skipping it.
package testenv

import (
	"os"
	"testing"
)

// RequireServicesVar turns skips for missing servers into failures.
const RequireServicesVar = "PRAETOR_REQUIRE_SERVICES"

// ServicesRequired reports whether missing servers must fail tests.
func ServicesRequired() bool {
	v := os.Getenv(RequireServicesVar)
	return v != "" && v != "0" && v != "false"
}

// Unavailable skips t because a server is missing, or fails it when servers
// are required. variable names the environment variable that would provide it.
func Unavailable(t testing.TB, server, variable, why string) {
	t.Helper()
	msg := server + " is not available (" + why + "): set " + variable
	if ServicesRequired() {
		t.Fatal(msg + "; " + RequireServicesVar + " is set, so this is a failure")
	}
	t.Skip(msg + " to run this test")
}
