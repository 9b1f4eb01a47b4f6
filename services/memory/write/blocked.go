package write

import (
	"fmt"

	"github.com/praetorhq/praetor/services/memory/graph"
	"github.com/praetorhq/praetor/services/memory/scope"
)

// Fix is how the caller of a save names its inputs and its memory, for the
// detail of a save blocked for want of a registration (see Unregistered).
type Fix struct {
	// Flags follow the add-project command: those that choose the save's
	// tenant and store (" --tenant acme --data-dir /d"); a secret's value
	// is not repeated.
	Flags string
	// ProjectArg is the caller's input that named the project ("--project",
	// "project_id"); FocusScopeArg the one that asked for the focus scope
	// ("--scope focus", `scope "focus"`).
	ProjectArg, FocusScopeArg string
}

// Unregistered says which registration a save blocked at the scope gate
// lacks (its project, or the focus area it asked to write to) and the
// command that makes it, praetor memory add-project; no memory tool
// registers projects. It returns "" when rc is not such a block. The
// gate's own detail ("scope is uncertain; only resolved_project and
// resolved_focus scopes accept writes") names neither.
func Unregistered(r Request, rc Receipt, fix Fix) string {
	if rc.Status != BlockedScope {
		return ""
	}
	switch {
	case rc.ScopeState == scope.Uncertain:
		return fmt.Sprintf("project %s is not registered in the memory of tenant %s: register it with "+
			"praetor memory add-project --project %s%s, or correct %s", r.ProjectID, r.TenantID, r.ProjectID, fix.Flags, fix.ProjectArg)
	case r.Level == graph.LevelFocus && r.Focus != "" && rc.ScopeState == scope.ResolvedProject:
		return fmt.Sprintf("focus area %s of project %s is not registered: register it with "+
			"praetor memory add-project --project %s --focus %s%s, or save without %s", r.Focus, r.ProjectID, r.ProjectID, r.Focus, fix.Flags, fix.FocusScopeArg)
	}
	return ""
}
