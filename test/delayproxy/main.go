// Command delayproxy forwards TCP connections to a target, holding every
// chunk of bytes for a fixed time in each direction (order kept): a network
// hop in front of a local server, for benchmarks of what round trips cost.
//
//	go run ./test/delayproxy -listen 127.0.0.1:6432 -target 127.0.0.1:5432 -delay 250us
//	DATABASE_URL=postgres://praetor:praetor@127.0.0.1:6432/praetor?sslmode=disable \
//	  go test -run '^$' -bench 'TurnPath/postgres/paced100' -benchtime 2000x ./cmd/praetor/
//
// Go's timers hold a chunk for at least the delay, often more: on the
// development machine 250µs each way came to about 1.7 ms a round trip.
package main

import (
	"flag"
	"io"
	"log"
	"net"
	"time"
)

type chunk struct {
	at   time.Time
	data []byte
}

func pipe(dst io.Writer, src io.Reader, delay time.Duration) {
	ch := make(chan chunk, 1024)
	go func() {
		defer close(ch)
		for {
			buf := make([]byte, 64<<10)
			n, err := src.Read(buf)
			if n > 0 {
				ch <- chunk{time.Now().Add(delay), buf[:n]}
			}
			if err != nil {
				return
			}
		}
	}()
	for c := range ch {
		time.Sleep(time.Until(c.at))
		if _, err := dst.Write(c.data); err != nil {
			return
		}
	}
}

func main() {
	listen := flag.String("listen", "127.0.0.1:6432", "address to accept connections on")
	target := flag.String("target", "127.0.0.1:5432", "address to forward them to")
	delay := flag.Duration("delay", 250*time.Microsecond, "how long each chunk is held, each way")
	flag.Parse()
	l, err := net.Listen("tcp", *listen)
	if err != nil {
		log.Fatal(err)
	}
	for {
		c, err := l.Accept()
		if err != nil {
			log.Fatal(err)
		}
		go func() {
			t, err := net.Dial("tcp", *target)
			if err != nil {
				c.Close()
				return
			}
			go func() { pipe(t, c, *delay); t.Close() }()
			pipe(c, t, *delay)
			c.Close()
		}()
	}
}
