package sqlite

import (
	"fmt"

	"modernc.org/libc"
	sqlite3 "modernc.org/sqlite/lib"
)

// subJournalSpill is how many bytes of a connection's sub-journal SQLite
// keeps in memory before it moves it to a temporary file.
//
// The sub-journal holds the pages a savepoint or a statement may have to
// restore: under group commit every member after the first runs in a
// savepoint, so a batch's sub-journal grows with each member's pages. At
// SQLite's default of 64 kB it spills at saturation, and every page is then
// one more write to a temporary file. With temp_store=MEMORY it would never
// spill, and neither would sorts or a migration's CREATE INDEX: 4 MB keeps
// batches in memory and the worst case bounded.
const subJournalSpill = 4 << 20

// spillErr is why subJournalSpill could not be set; nil once set. It is set
// in init, before any connection: SQLite takes this option only before it
// initializes itself, which its first connection does.
var spillErr = setSubJournalSpill(subJournalSpill)

func setSubJournalSpill(n int32) error {
	tls := libc.NewTLS()
	defer tls.Close()
	va := libc.Xmalloc(tls, 8)
	if va == 0 {
		return fmt.Errorf("sqlite: sub-journal spill: out of memory")
	}
	defer libc.Xfree(tls, va)
	if rc := sqlite3.Xsqlite3_config(tls, sqlite3.SQLITE_CONFIG_STMTJRNL_SPILL, libc.VaList(va, n)); rc != sqlite3.SQLITE_OK {
		return fmt.Errorf("sqlite: sub-journal spill: sqlite3_config returned %d", rc)
	}
	return nil
}
