package api

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/rotahq/rota/alerts"
	"github.com/rotahq/rota/internal/errtext"
	"github.com/rotahq/rota/internal/strictjson"
)

// maxHintNames bounds how many alert names a nudge's reason lists.
const maxHintNames = 5

// WebhookMessage is Alertmanager's webhook payload, version 4.
type WebhookMessage struct {
	Version           string            `json:"version"`
	GroupKey          string            `json:"groupKey"`
	TruncatedAlerts   int               `json:"truncatedAlerts"`
	Status            string            `json:"status"`
	Receiver          string            `json:"receiver"`
	GroupLabels       map[string]string `json:"groupLabels"`
	CommonLabels      map[string]string `json:"commonLabels"`
	CommonAnnotations map[string]string `json:"commonAnnotations"`
	ExternalURL       string            `json:"externalURL"`
	Alerts            []WebhookAlert    `json:"alerts"`
}

// WebhookAlert is one alert of a WebhookMessage.
type WebhookAlert struct {
	Status       string            `json:"status"`
	Labels       map[string]string `json:"labels"`
	Annotations  map[string]string `json:"annotations"`
	StartsAt     time.Time         `json:"startsAt"`
	EndsAt       time.Time         `json:"endsAt"`
	GeneratorURL string            `json:"generatorURL"`
	Fingerprint  string            `json:"fingerprint"`
}

// ParseWebhook decodes and validates a webhook body: one JSON object of version "4", status
// firing or resolved, at least one alert, each with a status, an alertname, a start time and a
// fingerprint. Fields Alertmanager may add later are ignored.
func ParseWebhook(body []byte) (WebhookMessage, error) {
	var m WebhookMessage
	if err := strictjson.Decode(body, &m, strictjson.IgnoreUnknown); err != nil {
		return WebhookMessage{}, fmt.Errorf("decoding webhook: %w", err)
	}
	if err := m.validate(); err != nil {
		return WebhookMessage{}, fmt.Errorf("invalid webhook: %w", err)
	}
	return m, nil
}

func validStatus(s string) bool { return s == "firing" || s == "resolved" }

func (m WebhookMessage) validate() error {
	if m.Version != "4" {
		return fmt.Errorf("version %s, want \"4\"", errtext.Quote(m.Version))
	}
	if !validStatus(m.Status) {
		return fmt.Errorf("status %s, want firing or resolved", errtext.Quote(m.Status))
	}
	if len(m.Alerts) == 0 {
		return errors.New("no alerts")
	}
	for i, a := range m.Alerts {
		switch {
		case !validStatus(a.Status):
			return fmt.Errorf("alerts[%d]: status %s, want firing or resolved", i, errtext.Quote(a.Status))
		case a.Labels["alertname"] == "":
			return fmt.Errorf("alerts[%d]: no alertname label", i)
		case a.StartsAt.IsZero():
			return fmt.Errorf("alerts[%d]: no startsAt", i)
		case a.Fingerprint == "":
			return fmt.Errorf("alerts[%d]: no fingerprint", i)
		}
	}
	return nil
}

// Hints returns the sorted, distinct names of the firing alerts that are rota's: those that
// carry the alerts.SignalLabel label, as every rule rota generates does. Other alerts routed to
// rota are accepted and ignored. A notification that left alerts out (max_alerts:
// TruncatedAlerts) hints its rota alerts whatever their status: Alertmanager lists a group's
// alerts in label order and cuts the rest, so a resolved one listed may stand for firing ones
// left out (its status is then the listed alerts', resolved too).
func (m WebhookMessage) Hints() []string {
	var names []string
	for _, a := range m.Alerts {
		if (a.Status == "firing" || m.TruncatedAlerts > 0) && a.Labels[alerts.SignalLabel] != "" {
			names = append(names, a.Labels["alertname"])
		}
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// WebhookResponse answers an accepted webhook.
type WebhookResponse struct {
	Status string `json:"status"`
	// Nudged says whether a firing rota alert asked the loop for a pass.
	Nudged bool `json:"nudged"`
}

// webhook receives Alertmanager's notifications. Alerts are hints: a firing rota alert only
// nudges the loop, whose next pass reads the facts again before acting; a duplicate only
// nudges again, and nudges merge. Nothing is nudged unless the whole body is valid.
func (s *Server) webhook(w http.ResponseWriter, r *http.Request) {
	if !s.opts.WebhookAuthDisabled {
		switch err := checkBearer(r.Header.Get("Authorization"), s.tokens.Load().webhook); {
		case errors.Is(err, errNoCredentials):
			w.Header().Set("WWW-Authenticate", `Bearer realm="rota"`)
			s.rejectWebhook(w, http.StatusUnauthorized, resultUnauthorized, err.Error()+
				"; Alertmanager sends one with http_config: authorization: credentials_file: (the token of server.webhook_token_file), not basic_auth")
			return
		case err != nil:
			s.rejectWebhook(w, http.StatusForbidden, resultForbidden, err.Error())
			return
		}
	}
	select {
	case s.webhooks <- struct{}{}:
		defer func() { <-s.webhooks }()
	default:
		w.Header().Set("Retry-After", "1")
		s.rejectWebhook(w, http.StatusServiceUnavailable, resultBusy, fmt.Sprintf("%d webhook requests are being read already; send again", maxWebhooksInFlight))
		return
	}
	body, err := readBody(w, r, s.opts.WebhookMaxBodyBytes)
	if err != nil {
		result := resultMalformed
		if bodyStatus(err) == http.StatusRequestEntityTooLarge {
			result = resultTooLarge
		}
		s.rejectWebhook(w, bodyStatus(err), result, err.Error())
		return
	}
	msg, err := ParseWebhook(body)
	if err != nil {
		s.rejectWebhook(w, http.StatusBadRequest, resultMalformed, err.Error())
		return
	}
	hints := msg.Hints()
	if len(hints) > 0 {
		s.opts.Backend.Nudge(nudgeReason(hints))
	}
	s.metrics.webhookRequests.WithLabelValues(resultAccepted).Inc()
	s.log.WithFields(logrus.Fields{"status": msg.Status, "alerts": len(msg.Alerts), "hints": hints}).Debug("webhook accepted")
	writeJSON(w, http.StatusOK, WebhookResponse{Status: resultAccepted, Nudged: len(hints) > 0})
}

func (s *Server) rejectWebhook(w http.ResponseWriter, code int, result, msg string) {
	s.metrics.webhookRequests.WithLabelValues(result).Inc()
	s.rejects.warn(s.log, result, msg)
	writeError(w, code, msg)
}

// nudgeReason names the alerts behind a nudge, a bounded number of them.
func nudgeReason(hints []string) string {
	if len(hints) > maxHintNames {
		return fmt.Sprintf("alertmanager: %s and %d more", strings.Join(hints[:maxHintNames], ","), len(hints)-maxHintNames)
	}
	return "alertmanager: " + strings.Join(hints, ",")
}
