#!/bin/sh
# A minimal command agent: it writes every declared output as the context it
# was given (read from stdin), and hands over a count of its inputs. Real
# agent CLIs follow the same protocol (see services/orchestrator/agent/command).
set -eu
context=$(cat)
inputs=$(printf '%s\n' "$context" | grep -c '^### ' || true)
printf '%s\n' "$PRAETOR_OUTPUTS" | while IFS= read -r out; do
  [ -n "$out" ] || continue
  mkdir -p "$(dirname "$out")"
  {
    printf '# %s\n\nAssembled by %s for task %s.\n\n' "$out" "$PRAETOR_AGENT" "$PRAETOR_TASK_ID"
    printf '%s\n' "$context"
  } > "$out"
done
printf '{"assembled_by": "%s", "sections": %s}\n' "$PRAETOR_AGENT" "$inputs" > "$PRAETOR_HANDOVER_FILE"
if [ "$PRAETOR_TASK_KIND" = approval ]; then
  printf '{"approved": true, "reason": "assembled"}\n' > "$PRAETOR_APPROVAL_FILE"
fi
