package gctune

import (
	"log/slog"
	"math"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
)

func env(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

func TestDecide(t *testing.T) {
	const gib = 1 << 30
	var container uint64 = 2 * gib // a variable: 90% of it is no whole constant
	for _, tc := range []struct {
		name      string
		vars      map[string]string
		container uint64
		want      Settings
	}{
		{"defaults without a container limit", nil, 0,
			Settings{Percent: DefaultPercent, PercentFrom: "default", MemoryLimit: math.MaxInt64, MemoryLimitFrom: "none", Procs: 3, ProcsFrom: "default"}},
		{"a container limit gives GOMEMLIMIT", nil, container,
			Settings{Percent: DefaultPercent, PercentFrom: "default", MemoryLimit: int64(float64(container) * MemoryRatio), MemoryLimitFrom: "cgroup", Procs: 3, ProcsFrom: "default"}},
		{"GOGC wins", map[string]string{"GOGC": "150"}, 0,
			Settings{Percent: 150, PercentFrom: "GOGC", MemoryLimit: math.MaxInt64, MemoryLimitFrom: "none", Procs: 3, ProcsFrom: "default"}},
		{"GOGC=off", map[string]string{"GOGC": "off"}, 0,
			Settings{Percent: -1, PercentFrom: "GOGC", MemoryLimit: math.MaxInt64, MemoryLimitFrom: "none", Procs: 3, ProcsFrom: "default"}},
		{"GOMEMLIMIT wins over the container", map[string]string{"GOMEMLIMIT": "1GiB"}, 2 * gib,
			Settings{Percent: DefaultPercent, PercentFrom: "default", MemoryLimit: -1, MemoryLimitFrom: "GOMEMLIMIT", Procs: 3, ProcsFrom: "default"}},
		{"GOMAXPROCS wins", map[string]string{"GOMAXPROCS": "2"}, 0,
			Settings{Percent: DefaultPercent, PercentFrom: "default", MemoryLimit: math.MaxInt64, MemoryLimitFrom: "none", Procs: 2, ProcsFrom: "GOMAXPROCS"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Decide(env(tc.vars), tc.container, 2); got != tc.want {
				t.Errorf("Decide = %+v, want %+v", got, tc.want)
			}
		})
	}
}

// Apply changes the process: each case restores what it found.
func TestApply(t *testing.T) {
	before := debug.SetGCPercent(100)
	limit := debug.SetMemoryLimit(-1)
	procs := runtime.GOMAXPROCS(0)
	t.Cleanup(func() {
		debug.SetGCPercent(before)
		debug.SetMemoryLimit(limit)
		runtime.GOMAXPROCS(procs)
	})

	t.Run("runs one processor more than the runtime's default, once", func(t *testing.T) {
		for range 2 {
			s, err := Apply(env(nil))
			if err != nil {
				t.Log(err) // a container limit that cannot be read: a warning, not a failure
			}
			if got, want := runtime.GOMAXPROCS(0), defaultProcs+ExtraProcs; got != want || s.Procs != want {
				t.Errorf("GOMAXPROCS after Apply = %d (reported %d), want %d", got, s.Procs, want)
			}
		}
	})
	t.Run("leaves an explicit GOMAXPROCS", func(t *testing.T) {
		runtime.GOMAXPROCS(defaultProcs)
		s, _ := Apply(env(map[string]string{"GOMAXPROCS": "1"}))
		if got := runtime.GOMAXPROCS(0); got != defaultProcs || s.ProcsFrom != "GOMAXPROCS" {
			t.Errorf("GOMAXPROCS after Apply with GOMAXPROCS set = %d (from %s), want %d unchanged", got, s.ProcsFrom, defaultProcs)
		}
	})

	t.Run("sets the default percent", func(t *testing.T) {
		s, err := Apply(env(nil))
		if err != nil {
			t.Log(err) // a container limit that cannot be read: a warning, not a failure
		}
		if got := debug.SetGCPercent(100); got != DefaultPercent || s.Percent != DefaultPercent {
			t.Errorf("GC percent after Apply = %d (reported %d), want %d", got, s.Percent, DefaultPercent)
		}
	})
	t.Run("leaves an explicit GOGC", func(t *testing.T) {
		debug.SetGCPercent(73) // as if the runtime had read GOGC=73
		s, err := Apply(env(map[string]string{"GOGC": "73"}))
		if err != nil {
			t.Log(err) // a container limit that cannot be read: a warning, not a failure
		}
		if got := debug.SetGCPercent(100); got != 73 || s.PercentFrom != "GOGC" {
			t.Errorf("GC percent after Apply with GOGC=73 = %d (from %s), want 73 from GOGC", got, s.PercentFrom)
		}
	})
	t.Run("reports an explicit GOMEMLIMIT", func(t *testing.T) {
		debug.SetMemoryLimit(3 << 30) // as if the runtime had read GOMEMLIMIT=3GiB
		s, err := Apply(env(map[string]string{"GOMEMLIMIT": "3GiB"}))
		if err != nil {
			t.Log(err) // a container limit that cannot be read: a warning, not a failure
		}
		if s.MemoryLimit != 3<<30 || debug.SetMemoryLimit(-1) != 3<<30 {
			t.Errorf("memory limit after Apply with GOMEMLIMIT=3GiB: reported %d, want %d, unchanged", s.MemoryLimit, int64(3<<30))
		}
	})
}

func TestLogValue(t *testing.T) {
	for s, want := range map[Settings]string{
		{Percent: 400, PercentFrom: "default", MemoryLimit: math.MaxInt64, MemoryLimitFrom: "none", Procs: 3, ProcsFrom: "default"}: "gc.gogc=400 gc.gogc_from=default gc.memory_limit=none gc.memory_limit_from=none gc.procs=3 gc.procs_from=default",
		{Percent: -1, PercentFrom: "GOGC", MemoryLimit: 921 << 20, MemoryLimitFrom: "cgroup", Procs: 8, ProcsFrom: "GOMAXPROCS"}:    "gc.gogc=off gc.gogc_from=GOGC gc.memory_limit=921MiB gc.memory_limit_from=cgroup gc.procs=8 gc.procs_from=GOMAXPROCS",
	} {
		var b strings.Builder
		slog.New(slog.NewTextHandler(&b, &slog.HandlerOptions{ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey || a.Key == slog.LevelKey || a.Key == slog.MessageKey {
				return slog.Attr{}
			}
			return a
		}})).Info("", "gc", s)
		if got := strings.TrimSpace(b.String()); got != want {
			t.Errorf("logged %q, want %q", got, want)
		}
	}
}
