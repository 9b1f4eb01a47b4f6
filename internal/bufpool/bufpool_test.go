package bufpool

import "testing"

func TestPutKeepsWhatWasGrownWithinTheBound(t *testing.T) {
	p := New(64)
	buf := p.Get()
	if len(*buf) != 0 {
		t.Fatalf("Get = %q, want an empty buffer", *buf)
	}
	b := append(*buf, "a buffer grown by append"...)
	p.Put(buf, b)
	if cap(*buf) != cap(b) || len(*buf) != 0 {
		t.Fatalf("after Put the buffer has len %d, cap %d; want 0 and the grown %d", len(*buf), cap(*buf), cap(b))
	}
	big := p.Get()
	large := make([]byte, 0, 65)
	p.Put(big, large)
	if cap(*big) == cap(large) {
		t.Fatal("a buffer past the bound was kept")
	}
}
