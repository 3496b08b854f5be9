//go:build rotafault

package main

import (
	"errors"
	"io/fs"
	"os"
	"strings"
	"syscall"

	"github.com/sirupsen/logrus"

	"github.com/rotahq/rota/scaler/executor"
	"github.com/rotahq/rota/scaler/fleet"
)

// faultEnv names the fault of a test build: MODE:KIND:STEP:MARKER. The first rota process of
// a fleet to reach STEP of an action of KIND creates the file MARKER (only one can) and then
// SIGKILLs itself (MODE kill: kill -9 at exactly that step) or SIGSTOPs itself (MODE stop: a
// leader frozen there, which the test continues with SIGCONT).
const faultEnv = "ROTA_TEST_FAULT"

func faultHook(log *logrus.Entry) func(string, fleet.Kind, executor.Step) error {
	spec := os.Getenv(faultEnv)
	if spec == "" {
		return nil
	}
	parts := strings.SplitN(spec, ":", 4)
	if len(parts) != 4 || (parts[0] != "kill" && parts[0] != "stop") {
		log.WithField("fault", spec).Fatal(faultEnv + " is not MODE:KIND:STEP:MARKER")
	}
	mode, kind, step, marker := parts[0], fleet.Kind(parts[1]), executor.Step(parts[2]), parts[3]
	return func(node string, k fleet.Kind, s executor.Step) error {
		if k != kind || s != step {
			return nil
		}
		f, err := os.OpenFile(marker, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
		if errors.Is(err, fs.ErrExist) {
			return nil // another rota took the fault
		}
		if err != nil {
			return err
		}
		_, _ = f.WriteString(node + "\n")
		_ = f.Close()
		sig := syscall.SIGKILL
		if mode == "stop" {
			sig = syscall.SIGSTOP
		}
		log.WithFields(logrus.Fields{"node": node, "action": k, "step": s, "signal": sig}).Warn("test fault: signalling myself")
		return syscall.Kill(os.Getpid(), sig)
	}
}
