package main

import (
	"context"
	"fmt"
	"io"

	"github.com/praetorhq/praetor/internal/engine"
	"github.com/praetorhq/praetor/internal/engine/builtin"
	"github.com/praetorhq/praetor/internal/engine/contextasm"
	"github.com/praetorhq/praetor/internal/engine/offlineskill"
	"github.com/praetorhq/praetor/internal/node"
	"github.com/praetorhq/praetor/services/extractor"
	"github.com/praetorhq/praetor/services/gateway"
	"github.com/praetorhq/praetor/services/runner"
)

// loadEngines loads the shipped engines and those of dirs, printing the
// warnings; invalid engines stop the start with every error listed.
func loadEngines(dirs []string, warn io.Writer) (*engine.Catalog, *engine.Registry, error) {
	reg, err := builtin.Registry()
	if err != nil {
		return nil, nil, err
	}
	cat, report, err := builtin.Load(reg, dirs...)
	for _, w := range report.Warnings {
		fmt.Fprintln(warn, w)
	}
	for _, e := range report.Errors {
		fmt.Fprintln(warn, e)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("engines: %d errors (listed above; praetor validate DIR checks a directory): %w", len(report.Errors), err)
	}
	return cat, reg, nil
}

// useOfflineSkills lets the offline provider drive the engines.
func useOfflineSkills(d node.Deps) {
	if d.Offline == nil {
		return
	}
	for purpose, skill := range offlineskill.Skills() {
		d.Offline.Handle(purpose, skill)
	}
}

func newGateway(_ context.Context, d node.Deps) (node.Service, error) {
	g, err := gateway.New(gateway.Config{DB: d.DB, Bus: d.Bus, Relay: d.Relay, Engines: d.Engines,
		Registry: d.EngineRegistry, Logger: d.Logger, OpenTenant: d.DevTenant, Provider: d.LLMInfo.Provider,
		Offline: d.LLMInfo.Offline})
	if err != nil {
		return nil, err
	}
	g.Routes(d.Mux)
	return g, nil
}

func newExtractor(_ context.Context, d node.Deps) (node.Service, error) {
	useOfflineSkills(d)
	return extractor.New(extractor.Config{DB: d.DB, Bus: d.Bus, Relay: d.Relay, Engines: d.Engines, LLM: d.LLM,
		Logger: d.Logger, Registerer: d.Registerer, AckWait: d.AckWait})
}

func newRunner(_ context.Context, d node.Deps) (node.Service, error) {
	useOfflineSkills(d)
	cfg := runner.Config{LLM: d.LLM, Registry: d.EngineRegistry, Logger: d.Logger}
	if d.Offline == nil {
		cfg.Summarizer = contextasm.LLMSummarizer{LLM: d.LLM}
	}
	r, err := runner.New(cfg)
	if err != nil {
		return nil, err
	}
	return runner.NewService(runner.ServiceConfig{DB: d.DB, Bus: d.Bus, Relay: d.Relay, Engines: d.Engines, Runner: r,
		Logger: d.Logger, Registerer: d.Registerer, AckWait: d.AckWait})
}
