package neo4j

import (
	"errors"
	"fmt"
	"testing"

	"github.com/neo4j/neo4j-go-driver/v5/neo4j"
)

// Two processes creating the schema at once: the loser of a race is told
// that an equivalent rule exists, which ensure takes as "run it again".
func TestSchemaRuleExists(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{&neo4j.Neo4jError{Code: "Neo.ClientError.Schema.EquivalentSchemaRuleAlreadyExists"}, true},
		{fmt.Errorf("schema: %w", &neo4j.Neo4jError{Code: "Neo.ClientError.Schema.IndexAlreadyExists"}), true},
		{&neo4j.Neo4jError{Code: "Neo.ClientError.Schema.ConstraintAlreadyExists"}, true},
		{&neo4j.Neo4jError{Code: "Neo.ClientError.Schema.ConstraintValidationFailed"}, false},
		{&neo4j.Neo4jError{Code: "Neo.ClientError.Statement.SyntaxError"}, false},
		{errors.New("Neo.ClientError.Schema.IndexAlreadyExists"), false},
		{nil, false},
	} {
		if got := schemaRuleExists(tc.err); got != tc.want {
			t.Errorf("schemaRuleExists(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}
