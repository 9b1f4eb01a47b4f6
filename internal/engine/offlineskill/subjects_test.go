package offlineskill

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/praetorhq/praetor/internal/engine"
	"github.com/praetorhq/praetor/internal/engine/extraction"
)

// The options are read once a call of ofOptions, not once for each item
// said of them: an item more costs as many allocations whatever the
// number of options known.
func TestOfOptionsReadsTheOptionsOnce(t *testing.T) {
	perItem := func(options int) float64 {
		known := make([]string, 0, options)
		for i := range options - 1 {
			known = append(known, fmt.Sprintf("Option%02d", i))
		}
		known = append(known, "Glofox") // the name matched last
		cur, _ := json.Marshal(known)
		p := extraction.Prompt{Fields: []extraction.PromptField{
			{Path: "options", DisplayName: "Options", ValueType: engine.TypeArray, Current: cur},
			{Path: "pros", DisplayName: "Pros", Description: "Advantages of the options", ValueType: engine.TypeArray},
		}}
		allocs := func(items int) float64 {
			v := make([]any, items)
			for i := range v {
				v[i] = fmt.Sprintf("Glofox looks great %02d", i)
			}
			ans := Answer{Fields: map[string]fieldAnswer{"pros": {Value: v, byPattern: true}}}
			return testing.AllocsPerRun(20, func() {
				if ofOptions(p, ans) {
					t.Fatal("an item said of a known option was taken off")
				}
			})
		}
		return allocs(5) - allocs(1)
	}
	if few, many := perItem(2), perItem(20); many != few {
		t.Errorf("4 items more allocate %.0f times with 20 options known, want %.0f as with 2", many, few)
	}
}
