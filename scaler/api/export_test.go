package api

// For the external tests: the webhook's bound on requests read at once, and how many are.
const MaxWebhooksInFlight = maxWebhooksInFlight

func (s *Server) WebhooksInFlight() int { return len(s.webhooks) }
