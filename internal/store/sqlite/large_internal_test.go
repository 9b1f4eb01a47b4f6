package sqlite

import (
	"bytes"
	"fmt"
	"sync"
	"testing"
)

// TestPackRoundTrip packs values of many sizes from several goroutines at
// once (the encoder's buffers are pooled) and unpacks each to what it was.
func TestPackRoundTrip(t *testing.T) {
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for size := g; size < 70_000; size += 997 {
				v := bytes.Repeat([]byte(fmt.Sprintf(`{"turn":%d,"text":"bread"},`, size)), size/24+1)[:size]
				got, err := unpack(pack(v))
				if err != nil || !bytes.Equal(got, v) {
					t.Errorf("size %d: unpacked %d bytes (equal %v), error %v", size, len(got), bytes.Equal(got, v), err)
					return
				}
			}
		})
	}
	wg.Wait()
}
