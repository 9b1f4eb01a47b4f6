// Package analysis is the seed's AnalysisRouter: it routes a task
// description to a reasoning mode by its keywords and says why.
//
//	strategic, multi-factor, planning    sequential
//	trade-off, compare, debate           debate
//	unclear, requirements, discovery     socratic
//	none of them                         sequential (the safe default)
//
// Keywords match whole words, case-insensitively, with their common
// inflections ("trade-offs", "comparing", "requirement"). When a task holds
// keywords of several modes, the mode with the most matches wins; a tie goes
// to the earlier row of the table.
package analysis
