package sqlite

import (
	"bytes"
	"fmt"
	"slices"
	"unicode/utf8"

	"github.com/klauspost/compress/s2"

	"github.com/praetorhq/praetor/internal/bufpool"
)

// SQLite compresses nothing, and a turn rewrites tens of kilobytes of JSON
// (the session's working memory, its sidebar, the extraction state, the
// outbox messages): every page of them is written to the log, then again to
// the database by a checkpoint. A store.Large or store.LargeBytes value is
// kept compressed with S2 (github.com/klauspost/compress/s2), which takes
// ~10 µs for 30 kB of JSON and shrinks it four times, when that saves at
// least an eighth.
//
// A compressed value is a BLOB: packedMagic, then an S2 block. The magic
// starts with 0xff, which no UTF-8 text has, so no JSON can be mistaken for
// a packed value. A value that is not compressed is stored as it is: as
// TEXT when it is UTF-8 (JSON stays readable to SQLite's JSON functions),
// else as a BLOB; one that would begin with packedMagic is packed all the
// same, so that every value beginning with it is a packed one.
const (
	// packMin is the smallest value worth compressing: below it a row's
	// cell fits a page either way.
	packMin = 512
	// packedMaxLen bounds the decoded length a packed value may claim, so a
	// corrupt header cannot make a read allocate without bound. SQLite's
	// own limit on a value is 1 GB.
	packedMaxLen = 1 << 30
)

var packedMagic = []byte{0xff, 'S', '2', 0x01}

// largeArg is how a store.Large or store.LargeBytes argument goes to the
// driver.
func largeArg(v []byte) any {
	if v == nil {
		return nil
	}
	magic := bytes.HasPrefix(v, packedMagic)
	if len(v) >= packMin || magic {
		packed := pack(v)
		if magic || len(packed) <= len(v)-len(v)/8 {
			return packed
		}
	}
	if utf8.Valid(v) {
		return string(v)
	}
	return v
}

// pack compresses v into a buffer of the pool, then copies the result out:
// S2 wants room for the worst case, 1.2 times v, where the result is a
// fraction of it.
func pack(v []byte) []byte {
	buf := packBuffers.Get()
	dst := slices.Grow(*buf, s2.MaxEncodedLen(len(v)))
	defer packBuffers.Put(buf, dst)
	enc := s2.Encode(dst[:cap(dst)], v)
	out := make([]byte, len(packedMagic)+len(enc))
	copy(out[copy(out, packedMagic):], enc)
	return out
}

// packBuffers holds pack's worst-case buffers, up to a few megabytes each.
var packBuffers = bufpool.New(4 << 20)

// unpack returns a column's value as it was written: a packed value
// decompressed, anything else copied.
func unpack(src []byte) ([]byte, error) {
	if !bytes.HasPrefix(src, packedMagic) {
		return bytes.Clone(src), nil
	}
	block := src[len(packedMagic):]
	n, err := s2.DecodedLen(block)
	if err != nil {
		return nil, fmt.Errorf("sqlite: a compressed value: %w", err)
	}
	if n > packedMaxLen {
		return nil, fmt.Errorf("sqlite: a compressed value claims %d bytes", n)
	}
	out, err := s2.Decode(make([]byte, n), block)
	if err != nil {
		return nil, fmt.Errorf("sqlite: a compressed value: %w", err)
	}
	return out, nil
}

// largeScanner scans a column written as store.Large or store.LargeBytes.
type largeScanner struct{ dst *[]byte }

func (s largeScanner) Scan(src any) error {
	switch v := src.(type) {
	case nil:
		*s.dst = nil
	case string:
		*s.dst = []byte(v)
	case []byte:
		b, err := unpack(v)
		if err != nil {
			return err
		}
		*s.dst = b
	default:
		return fmt.Errorf("sqlite: cannot scan %T into a store.Large", src)
	}
	return nil
}
