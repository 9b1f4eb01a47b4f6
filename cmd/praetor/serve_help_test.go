package main

import (
	"strings"
	"testing"

	"github.com/praetorhq/praetor/services/orchestrator"
)

// Every variable the orchestrator's settings read is listed by serve
// --help and dev --help, which run those services: they are not flags, and
// would otherwise be found only in the code.
func TestHelpListsWorkflowSettings(t *testing.T) {
	var read []string
	_, _ = orchestrator.SettingsFromEnv(func(name string) (string, bool) {
		read = append(read, name)
		return "", false
	})
	if len(read) == 0 {
		t.Fatal("SettingsFromEnv read no variable")
	}
	for _, cmd := range []string{"serve", "dev"} {
		help := helpOf(t, cmd)
		for _, name := range read {
			if !strings.Contains(help, "\n  "+name+"\n") {
				t.Errorf("praetor %s --help does not list %s, which the orchestrator reads", cmd, name)
			}
		}
	}
}
