// Package handoff is the Handoff Protocol of seed 000: what one
// conversational engine passes to the next when an exit transition fires.
//
//   - Context mappers (Mapper) turn a session's working memory into a
//     contracts.EngineHandoff. They are Go code registered by name, one per
//     exit transition ("exploration->project-discovery"), like custom
//     evaluators; Builtin registers those of the shipped engines, and
//     Generic serves engines that register none. Map adds what the
//     session's own inbound handoff brought (CarryForward), so a chain of
//     engines drops nothing the user settled; what the session settled
//     again (a decision on the same question, a constraint with the same
//     label) replaces what was carried, so nothing piles up either.
//   - Validate applies the seed's rules: every section present, decision
//     reasoning longer than 20 characters and not a placeholder, confidences
//     in [0, 1], no self-transition, at least one decision, constraint or
//     gap. A handoff that fails is never written.
//   - Format renders the seed's executive summary, which the context
//     assembler puts at the very top of the receiving engine's context
//     (recall is best there: "Lost in the Middle").
//   - Verify is the I-PASS check of the receiving engine's first reply:
//     Identity, Project, Assessment, Situation, Safety. Keywords (stopwords
//     removed) of each critical element are fuzzily matched (Jaccard) against
//     the reply; the handoff is verified when more than half of the critical
//     elements are acknowledged. A failed verification is reported, never
//     blocking.
//
// Everything here is pure: functions of their arguments, with time passed in.
package handoff
