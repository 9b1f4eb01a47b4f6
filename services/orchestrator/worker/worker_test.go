package worker

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/cloudevents/sdk-go/v2/event"
	"github.com/nats-io/nats.go"

	"github.com/praetorhq/praetor/internal/store"
	"github.com/praetorhq/praetor/pkg/events"
	"github.com/praetorhq/praetor/services/orchestrator/agent"
)

// The pool's behaviour on a real server (answers, kills, redispatches) is
// tested with the dispatcher, in package dispatch.

type nopBus struct{}

func (nopBus) Subscribe(context.Context, events.ConsumerConfig, events.Handler) (*events.Subscription, error) {
	return nil, errors.New("not here")
}
func (nopBus) PublishMsgs(context.Context, []*nats.Msg) error { return nil }
func (nopBus) Refused(context.Context, string, error) bool    { return false }
func (nopBus) DeadLetterUnpublishable(context.Context, string, *nats.Msg, string, int) error {
	return nil
}

func (nopBus) Encode(context.Context, event.Event) (*nats.Msg, error) {
	return nil, errors.New("not here")
}

type nopDB struct{ store.DB }

func TestConfig(t *testing.T) {
	t.Parallel()
	rt := agent.NewRouter(nil)
	for _, tc := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"no bus", Config{DB: nopDB{}, Runtime: rt, Agents: []string{"a"}}, "required"},
		{"no agents", Config{Bus: nopBus{}, DB: nopDB{}, Runtime: rt}, "Agents is empty"},
		{"agent not a token", Config{Bus: nopBus{}, DB: nopDB{}, Runtime: rt, Agents: []string{"a.b"}}, "not a subject token"},
	} {
		if _, err := New(tc.cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: New = %v, want %q", tc.name, err, tc.want)
		}
	}
	p, err := New(Config{Bus: nopBus{}, DB: nopDB{}, Runtime: rt, Agents: []string{"writer", "analyst", "writer"}})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"agent-worker-analyst": "praetor.task.dispatched.*.analyst", "agent-worker-writer": "praetor.task.dispatched.*.writer"}
	if got := p.Consumers(); !reflect.DeepEqual(got, want) {
		t.Fatalf("consumers = %v", got)
	}
	if p.cfg.Name != "agent-worker" || p.cfg.Concurrency != 8 || p.cfg.MaxResultBytes != DefaultMaxResultBytes {
		t.Fatalf("defaults = %+v", p.cfg)
	}
	if err := p.Stop(context.Background()); err != nil {
		t.Fatalf("Stop before Start = %v", err)
	}
}
