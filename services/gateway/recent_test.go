package gateway

import (
	"fmt"
	"testing"
)

func TestRecentPassesEachIDOnceAndForgetsTheOldest(t *testing.T) {
	r := newRecent(3)
	for _, id := range []string{"a", "b", "c"} {
		if !r.first(id) {
			t.Fatalf("%s new, reported seen", id)
		}
	}
	for _, id := range []string{"a", "b", "c"} {
		if r.first(id) {
			t.Fatalf("%s seen, reported new", id)
		}
	}
	if !r.first("d") { // forgets a
		t.Fatal("d new, reported seen")
	}
	if !r.first("a") { // forgets b
		t.Fatal("a forgotten, reported seen")
	}
	if r.first("c") || r.first("d") {
		t.Fatal("c or d forgotten too early")
	}
	if !r.first("b") {
		t.Fatal("b forgotten, reported seen")
	}
	if len(r.ids) != 3 || len(r.ring) != 3 {
		t.Fatalf("remembers %d ids in a ring of %d, want 3 and 3", len(r.ids), len(r.ring))
	}
	for i := range 10 {
		r.first(fmt.Sprint(i))
	}
	if len(r.ids) != 3 {
		t.Fatalf("remembers %d ids, want at most 3", len(r.ids))
	}
}
