// Package awslog routes the AWS SDK's own log lines into log/slog: an
// adapter, like engine/dynamostore and engine/kinesisstream, for
// applications that build their SDK clients themselves. Without it the SDK
// writes unstructured "SDK ... WARN" lines to stderr.
//
//	cfg, err := config.LoadDefaultConfig(ctx, config.WithLogger(awslog.New(logger)))
package awslog

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/aws/smithy-go/logging"
)

// New returns a logging.Logger (the SDK's, from smithy-go) that writes
// through log: the SDK's WARN lines at slog.LevelWarn, its DEBUG lines
// (and any other classification) at slog.LevelDebug, each with the
// attribute source=aws-sdk. A nil log is slog.Default(). It implements
// logging.ContextLogger, so lines carry the context of the call that
// logged them.
func New(log *slog.Logger) logging.Logger {
	if log == nil {
		log = slog.Default()
	}
	return logger{log: log, ctx: context.Background()}
}

type logger struct {
	log *slog.Logger
	ctx context.Context
}

// Logf implements logging.Logger.
func (l logger) Logf(c logging.Classification, format string, v ...any) {
	level := slog.LevelDebug
	if c == logging.Warn {
		level = slog.LevelWarn
	}
	if !l.log.Enabled(l.ctx, level) {
		return
	}
	l.log.Log(l.ctx, level, fmt.Sprintf(format, v...), "source", "aws-sdk")
}

// WithContext implements logging.ContextLogger.
func (l logger) WithContext(ctx context.Context) logging.Logger {
	return logger{log: l.log, ctx: ctx}
}
