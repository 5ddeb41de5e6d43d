package driversim

import (
	"context"
	"log/slog"
	"strings"
)

// logCounter is the consumers' log handler: it drops the lines and counts
// those that show a fault reached the driver's own code (the runner's
// hand-off check, the shutdown deadline) into the run's Stats.
type logCounter struct{ n *node }

func (h *logCounter) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelWarn }

func (h *logCounter) Handle(_ context.Context, r slog.Record) error {
	w := h.n.w
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case strings.HasPrefix(r.Message, "records held back"):
		w.stats.HeldBack++
	case strings.HasPrefix(r.Message, "graceful shutdown timed out"):
		w.stats.ShutdownTimeouts++
	case strings.HasPrefix(r.Message, "record processor failed"):
		w.stats.ProcessorErrors++
	}
	return nil
}

func (h *logCounter) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *logCounter) WithGroup(string) slog.Handler      { return h }
