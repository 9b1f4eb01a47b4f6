//go:build !race

package embedded_test

const concurrencyRounds = 200
