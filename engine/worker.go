package engine

// Worker is the decision core of one worker: deterministic, no I/O. Feed it
// inputs with Step; it answers with the effects to carry out (calls,
// notices) and when to wake it next. It is not safe for concurrent use.
type Worker struct {
	cfg Config
	rd  Ready
}

// NewWorker returns a worker for cfg, or an error naming every broken
// configuration rule.
func NewWorker(cfg Config) (*Worker, error) {
	c, err := cfg.Validate()
	if err != nil {
		return nil, err
	}
	return &Worker{cfg: c}, nil
}

// Owner returns the worker's owner id.
func (w *Worker) Owner() string { return w.cfg.Owner }

// Config returns the worker's configuration with defaults applied.
func (w *Worker) Config() Config { return w.cfg }

// Step feeds one input at time now and returns what the worker asks for.
// The returned Ready is valid until the next Step.
func (w *Worker) Step(now Now, in Input) Ready {
	_ = now
	_ = in
	return w.rd
}
