package dedup_test

import (
	"strings"
	"testing"

	"github.com/praetorhq/praetor/services/memory/dedup"
	"github.com/praetorhq/praetor/services/memory/graph"
)

// Text without the signs that change what it says normalizes as Words do
// (the stored hashes of such content stay valid); with them, texts that
// say different things differ. Found by helper-53: "C++" and "C", "> 200
// ms" and "< 200 ms", "-1" and "1" were one content.
func TestNormalizeKeepsTheSignsThatChangeTheMeaning(t *testing.T) {
	for _, s := range []string{"Use  Postgres!", "Ünïcödé — ﬁne, 16 GB/s; (draft) v2.1", "rate-limit the API", "", "e-mail 2-factor"} {
		if got, want := dedup.Normalize(s), strings.Join(graph.Words(s), " "); got != want {
			t.Errorf("Normalize(%q) = %q, want %q as before", s, got, want)
		}
	}
	for _, pair := range [][2]string{
		{"Use C++ for the engine", "Use C for the engine"},
		{"Use C# for the tools", "Use C for the tools"},
		{"Alert when p99 latency > 200 ms", "Alert when p99 latency < 200 ms"},
		{"Set max_retries to -1", "Set max_retries to 1"},
		{"x = 1", "x 1"},
	} {
		if dedup.ContentHash(graph.Decision, "", pair[0], "") == dedup.ContentHash(graph.Decision, "", pair[1], "") {
			t.Errorf("%q and %q hash alike (%q, %q)", pair[0], pair[1], dedup.Normalize(pair[0]), dedup.Normalize(pair[1]))
		}
	}
	if dedup.Normalize("C++  tooling") != dedup.Normalize("c++ Tooling!") {
		t.Error("case and spacing still do not matter with signs")
	}
}
