package events

import "github.com/google/uuid"

// idSpace is the UUID namespace of derived event ids.
var idSpace = uuid.MustParse("5b1c2f52-8d0e-4c0a-9a55-7a1f3c9d2e10")

// DeriveID returns a stable event id for the event a handler emits while
// handling the event parentID: the same parent and name give the same id on
// every run, so a handler re-run after a crash emits events the stream and
// the inboxes recognise as already seen.
func DeriveID(parentID string, name string) string {
	return uuid.NewSHA1(idSpace, []byte(parentID+"\x00"+name)).String()
}
