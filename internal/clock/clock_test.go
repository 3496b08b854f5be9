package clock

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestSleepEndsWithContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := (Real{}).Sleep(ctx, time.Hour); !errors.Is(err, context.Canceled) {
		t.Fatalf("Sleep on a cancelled context = %v, want context.Canceled", err)
	}
}

func TestAfterFuncStops(t *testing.T) {
	fired := make(chan struct{})
	stop := (Real{}).AfterFunc(time.Hour, func() { close(fired) })
	if !stop() {
		t.Fatal("stop() = false for a timer that had not fired")
	}
}
