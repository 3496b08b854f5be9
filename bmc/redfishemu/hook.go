package redfishemu

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
)

// hookTimeout bounds one hook run.
const hookTimeout = 30 * time.Second

// hookRunner runs hooks in order per server, without holding the server's lock, and lets
// Close wait for them.
type hookRunner struct {
	log    *logrus.Entry
	client *http.Client
	wg     sync.WaitGroup

	mu     sync.Mutex
	queues map[string][]hookCall
}

type hookCall struct {
	hook  Hook
	power string
}

func newHookRunner(log *logrus.Entry) *hookRunner {
	return &hookRunner{log: log, client: &http.Client{Timeout: hookTimeout}, queues: map[string][]hookCall{}}
}

// run queues the server's hook with the new power state; a server's hooks run one at a time,
// in order.
func (h *hookRunner) run(server string, hook Hook, power string) {
	if len(hook.Command) == 0 && hook.URL == "" {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	q, running := h.queues[server]
	h.queues[server] = append(q, hookCall{hook: hook, power: power})
	if running {
		return
	}
	h.wg.Add(1)
	go h.drain(server)
}

func (h *hookRunner) drain(server string) {
	defer h.wg.Done()
	for {
		h.mu.Lock()
		q := h.queues[server]
		if len(q) == 0 {
			delete(h.queues, server)
			h.mu.Unlock()
			return
		}
		call := q[0]
		h.queues[server] = q[1:]
		h.mu.Unlock()
		if err := h.exec(server, call); err != nil {
			h.log.WithFields(logrus.Fields{"server": server, "power": call.power}).WithError(err).Warn("power hook failed")
		}
	}
}

func (h *hookRunner) exec(server string, call hookCall) error {
	ctx, cancel := context.WithTimeout(context.Background(), hookTimeout)
	defer cancel()
	if len(call.hook.Command) > 0 {
		cmd := exec.CommandContext(ctx, call.hook.Command[0], call.hook.Command[1:]...)
		cmd.Env = append(os.Environ(), "ROTA_EMU_SERVER="+server, "ROTA_EMU_POWER="+call.power)
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("running hook command: %w: %s", err, bytes.TrimSpace(out))
		}
		return nil
	}
	body, _ := json.Marshal(map[string]string{"server": server, "power": call.power})
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, call.hook.URL, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("building hook request: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := h.client.Do(req)
	if err != nil {
		return fmt.Errorf("calling hook url: %w", err)
	}
	resp.Body.Close()
	if resp.StatusCode >= 300 {
		return fmt.Errorf("hook url answered %s", resp.Status)
	}
	return nil
}

func (h *hookRunner) wait() { h.wg.Wait() }
