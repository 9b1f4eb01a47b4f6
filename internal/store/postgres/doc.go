// Package postgres is the PostgreSQL adapter of the store port, on a pgx/v5
// connection pool. It is what praetor serve uses (DATABASE_URL).
//
// Transactions run at SERIALIZABLE isolation so that they behave as on the
// SQLite adapter, whose single writer serializes them: a read-modify-write
// never loses an update. The conflicts PostgreSQL detects instead of waiting
// (SQLSTATE 40001) and deadlocks (40P01) are retried by Tx with a jittered
// backoff, so fn may run more than once.
//
// Tables go to the first schema of the search_path; a search_path parameter
// in the URL (…?search_path=praetor) puts a deployment, or a test, in a
// schema of its own. Migrations are locked per schema, so replicas that all
// migrate at start take turns.
//
// A server that stops answering without closing its connections (a
// partition, a frozen host: packets dropped, no reset) would hold a
// statement for the kernel's TCP retransmissions, some 15 minutes. The
// connections send keepalive probes and set TCP_USER_TIMEOUT
// (Config.TCPUserTimeout, or the URL's tcp_user_timeout; 30s): the kernel
// drops one whose data or probes go unacknowledged that long, its statement
// fails, and the pool dials a new connection for the next. Each connection
// asks the server for the same bound on its end (tcp_keepalives_idle,
// _interval, _count and tcp_user_timeout, unless the URL sets them), so
// that the session of a replica cut off mid-work ends, with its locks,
// instead of holding the relay's lock for the server's two hours.
package postgres
