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
package postgres
