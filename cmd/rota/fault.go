//go:build !rotafault

package main

import (
	"github.com/sirupsen/logrus"

	"github.com/rotahq/rota/scaler/executor"
	"github.com/rotahq/rota/scaler/fleet"
)

// faultHook is the executor's fault hook: none in a production build (the tests' build, tag
// rotafault, has one that kills or stops this process at a chosen step).
func faultHook(*logrus.Entry) func(string, fleet.Kind, executor.Step) error { return nil }
