package retrieval

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/praetorhq/praetor/services/memory/graph"
)

type noStore struct{}

func (noStore) Read(context.Context, string, func(context.Context, graph.ReadTx) error) error {
	return errors.New("unexpected read")
}

func TestConfig(t *testing.T) {
	t.Parallel()
	c := Config{}.WithDefaults()
	if c.Timeout != 5*time.Second || c.Attempts != 3 || c.FocusLimit != 10 || c.ProjectLimit != 10 ||
		c.GlobalLimit != 5 || c.HygieneEvery != 30*24*time.Hour {
		t.Errorf("defaults = %+v, want the seed's 5 s, 10/10/5 and 30 days", c)
	}
	if _, err := New(Config{}); err == nil {
		t.Error("New without a store succeeded")
	}
	if _, err := New(Config{Store: noStore{}, Attempts: -1}); err == nil {
		t.Error("New with negative attempts succeeded")
	}
}

func TestRejectsBadInput(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	e, err := New(Config{Store: noStore{}, Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range [][3]string{{"", "p", ""}, {"t t", "p", ""}, {"t", "p/1", ""}, {"t", "p", "\x00"}} {
		if _, err := e.Retrieve(context.Background(), in[0], in[1], in[2]); !errors.Is(err, graph.ErrInvalid) {
			t.Errorf("Retrieve(%q, %q, %q): err = %v, want ErrInvalid", in[0], in[1], in[2], err)
		}
	}
	// Unresolved reads nothing and is counted.
	b, err := e.Retrieve(context.Background(), "t", "", "")
	if err != nil || b.Status != Empty {
		t.Fatalf("unresolved: %+v, %v", b, err)
	}
	mfs, err := reg.Gather()
	if err != nil || len(mfs) != 2 {
		t.Errorf("registered metrics = %d, %v; want 2", len(mfs), err)
	}
	if _, err := New(Config{Store: noStore{}, Registerer: reg}); err == nil {
		t.Error("registering the metrics twice succeeded")
	}
}
