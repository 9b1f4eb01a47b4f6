package events

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Names of the streams the event layer itself keeps.
const (
	// DeadLetterStream holds dead letters on praetor.dlq.<stream>.<consumer>.
	DeadLetterStream = "PRAETOR_DLQ"
	// AdvisoryStream captures the server's MaxDeliver advisories, so one
	// raised while no consumer process runs is still dead-lettered.
	AdvisoryStream = "PRAETOR_ADVISORIES"

	deadLetterPrefix   = "praetor.dlq"
	maxDeliverAdvisory = "$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES"

	// metaPartitions is the stream metadata key holding its partition count.
	metaPartitions = "praetor_partitions"
)

// StreamConfig describes a stream to provision.
type StreamConfig struct {
	// Name of the stream, e.g. PRAETOR_TURNS.
	Name string
	// Subjects the stream captures.
	Subjects []string
	// Partitions, when above zero, partitions the stream for per-key
	// ordering: the single subject pattern must end in two "*" tokens (tenant
	// and key), and the server appends a partition token computed from them.
	// Default: 0 (not partitioned).
	Partitions int
	// MaxAge bounds how long events are kept. Default: 0, kept forever (the
	// stream is the audit log).
	MaxAge time.Duration
	// Duplicates is the window in which a republished event id is dropped.
	// Default: 2m.
	Duplicates time.Duration
	// Replicas of the stream in a cluster. Default: 1.
	Replicas int
	// Memory selects memory storage instead of file storage (tests only).
	Memory bool
	// MaxBytes bounds the stream's size; the oldest events go first.
	// Default: -1, unlimited.
	MaxBytes int64
	// Compression is how the server stores the stream's message blocks once
	// they are full: CompressionS2, or CompressionNone (the default, also
	// ""). Readers see the same events either way. The server applies a
	// change to an existing stream from its next start, to the blocks filled
	// after it (nats-server reads the setting when it opens a stream's store);
	// EnsureStream logs a warning saying so.
	Compression string
}

// Stream compressions (StreamConfig.Compression).
const (
	CompressionNone = "none"
	CompressionS2   = "s2"
)

// CheckCompression returns an error naming a value that is not a stream
// compression ("" is: the default, none).
func CheckCompression(c string) error {
	switch c {
	case "", CompressionNone, CompressionS2:
		return nil
	}
	return fmt.Errorf("%q: want %s or %s", c, CompressionS2, CompressionNone)
}

// WithDefaults returns c with every unset field at its default.
func (c StreamConfig) WithDefaults() StreamConfig {
	c.Duplicates = cmp.Or(c.Duplicates, 2*time.Minute)
	c.Replicas = cmp.Or(c.Replicas, 1)
	c.MaxBytes = cmp.Or(c.MaxBytes, -1)
	return c
}

func (c StreamConfig) validate() error {
	switch {
	case c.Name == "" || strings.ContainsAny(c.Name, ".*> \t"):
		return fmt.Errorf("events: stream name %q must be non-empty without '.', '*', '>' or spaces", c.Name)
	case len(c.Subjects) == 0:
		return fmt.Errorf("events: stream %s needs at least one subject", c.Name)
	case c.Partitions < 0 || c.Partitions > 1024:
		return fmt.Errorf("events: stream %s: partitions %d must be within [0, 1024]", c.Name, c.Partitions)
	case c.Replicas < 1 || c.Replicas > 5:
		return fmt.Errorf("events: stream %s: replicas %d must be within [1, 5]", c.Name, c.Replicas)
	case c.Duplicates < 0 || c.MaxAge < 0:
		return fmt.Errorf("events: stream %s: durations must not be negative", c.Name)
	}
	if err := CheckCompression(c.Compression); err != nil {
		return fmt.Errorf("events: stream %s: compression %w", c.Name, err)
	}
	if c.Partitions > 0 {
		if len(c.Subjects) != 1 {
			return fmt.Errorf("events: partitioned stream %s must have exactly one subject pattern", c.Name)
		}
		if _, err := partitionTransform(c.Subjects[0], c.Partitions); err != nil {
			return fmt.Errorf("events: stream %s: %w", c.Name, err)
		}
	}
	return nil
}

// partitionTransform maps a.b.*.*.* to a.b.*.*.*.<partition of the last two>.
func partitionTransform(subject string, n int) (*jetstream.SubjectTransformConfig, error) {
	tokens := strings.Split(subject, ".")
	wild := 0
	for i, t := range tokens {
		switch t {
		case "*":
			wild++
			tokens[i] = fmt.Sprintf("{{wildcard(%d)}}", wild)
		case ">":
			return nil, fmt.Errorf("partitioned subject %q must not use '>'", subject)
		}
	}
	if wild < 2 || tokens[len(tokens)-1] != fmt.Sprintf("{{wildcard(%d)}}", wild) ||
		tokens[len(tokens)-2] != fmt.Sprintf("{{wildcard(%d)}}", wild-1) {
		return nil, fmt.Errorf("partitioned subject %q must end in two '*' tokens (tenant and key)", subject)
	}
	dest := strings.Join(tokens, ".") + fmt.Sprintf(".{{partition(%d,%d,%d)}}", n, wild-1, wild)
	return &jetstream.SubjectTransformConfig{Source: subject, Destination: dest}, nil
}

// EnsureStream creates the stream, or updates it to the config; running it
// again with the same config changes nothing. Changing the partition count of
// an existing stream is refused: it would move keys between partitions while
// events are in flight.
func (b *Bus) EnsureStream(ctx context.Context, c StreamConfig) error {
	c = c.WithDefaults()
	if err := c.validate(); err != nil {
		return err
	}
	sc := jetstream.StreamConfig{
		Name:       c.Name,
		Subjects:   c.Subjects,
		Retention:  jetstream.LimitsPolicy,
		Storage:    jetstream.FileStorage,
		MaxAge:     c.MaxAge,
		Duplicates: c.Duplicates,
		Replicas:   c.Replicas,
		MaxBytes:   c.MaxBytes,
		MaxMsgs:    -1,
		Discard:    jetstream.DiscardOld,
		Metadata:   map[string]string{metaPartitions: strconv.Itoa(c.Partitions)},
	}
	if c.Memory {
		sc.Storage = jetstream.MemoryStorage
	}
	if c.Compression == CompressionS2 {
		sc.Compression = jetstream.S2Compression
	}
	if c.Partitions > 0 {
		sc.SubjectTransform, _ = partitionTransform(c.Subjects[0], c.Partitions)
	}
	if s, err := b.js.Stream(ctx, c.Name); err == nil {
		have := s.CachedInfo().Config
		if got := partitionsOf(have); got != c.Partitions {
			return fmt.Errorf("events: stream %s has %d partitions and the config asks for %d: "+
				"changing it would reorder keys in flight; drain the stream's consumers and recreate it", c.Name, got, c.Partitions)
		}
		if have.Compression != sc.Compression && have.Storage == jetstream.FileStorage {
			// The server takes the new setting at once but its store reads
			// it only when it opens the stream: at the server's next start.
			b.cfg.Logger.Warn("stream compression changes when the NATS server next starts; blocks already written stay as they are",
				"stream", c.Name, "from", have.Compression.String(), "to", sc.Compression.String())
		}
		if have.Storage != sc.Storage {
			// Storage cannot change in place; keep what exists.
			sc.Storage = have.Storage
		}
	} else if !errors.Is(err, jetstream.ErrStreamNotFound) {
		return fmt.Errorf("events: look up stream %s: %w", c.Name, err)
	}
	if _, err := b.js.CreateOrUpdateStream(ctx, sc); err != nil {
		return fmt.Errorf("events: provision stream %s: %w", c.Name, err)
	}
	return nil
}

// EnsureDeadLetterStreams provisions the dead-letter stream and the stream
// that captures MaxDeliver advisories. base supplies replicas, max age and
// storage; its name and subjects are ignored.
func (b *Bus) EnsureDeadLetterStreams(ctx context.Context, base StreamConfig) error {
	dlq := base
	dlq.Name, dlq.Subjects, dlq.Partitions = DeadLetterStream, []string{deadLetterPrefix + ".>"}, 0
	dlq.MaxAge = 0
	if err := b.EnsureStream(ctx, dlq); err != nil {
		return err
	}
	adv := base
	adv.Name, adv.Subjects, adv.Partitions = AdvisoryStream, []string{maxDeliverAdvisory + ".>"}, 0
	adv.MaxAge = cmp.Or(base.MaxAge, 7*24*time.Hour)
	return b.EnsureStream(ctx, adv)
}

// Partitions returns the partition count of a provisioned stream.
func (b *Bus) Partitions(ctx context.Context, stream string) (int, error) {
	s, err := b.js.Stream(ctx, stream)
	if err != nil {
		return 0, fmt.Errorf("events: stream %s: %w", stream, err)
	}
	return partitionsOf(s.CachedInfo().Config), nil
}

func partitionsOf(c jetstream.StreamConfig) int {
	n, _ := strconv.Atoi(c.Metadata[metaPartitions])
	return n
}
