// Package technique is the technique library of the Engine Framework: the
// seed's 16 conversation techniques (Cognitive Interview, Motivational
// Interviewing, HUMINT rapport, inform delivery, deliberation support,
// persuasion) plus the five its phase examples use, each with its applicable
// modes, agent instruction, effectiveness signal and cooldown; cooldown
// bookkeeping on working memory; effectiveness tracking; and the two
// schedulers: the seed's v1 LLM-driven one and the rule-based one it leaves
// as TODO, which picks by the phase's mode blend, cooldowns and the
// conversation's recent signals.
package technique
