package praetortest_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package when a test leaves goroutines behind: every
// node a test starts must end with it.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
