package mcosim

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	mcfgv1 "github.com/openshift/api/machineconfiguration/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Failure-injection labels on Node objects.
const (
	DegradeAtLabel    = "mcosim.kiln.dev/degrade-at"
	DegradeImageLabel = "mcosim.kiln.dev/degrade-image"
)

// Renderer renders a pool's MachineConfigs into one rendered config.
type Renderer interface {
	Render(ctx context.Context, pool *mcfgv1.MachineConfigPool, configs []mcfgv1.MachineConfig) (*mcfgv1.MachineConfig, error)
}

// Options configure the stand-in.
type Options struct {
	Client   client.Client
	Renderer Renderer
	// Interval between reconcile passes (default 20ms).
	Interval time.Duration
	// StepDelay is how long a node stays in each phase step (default 30ms).
	StepDelay time.Duration
	// OnError receives reconcile errors (default: dropped; they repeat).
	OnError func(error)
}

// Sim is a running stand-in.
type Sim struct {
	o       Options
	cancel  context.CancelFunc
	done    chan struct{}
	mu      sync.Mutex
	daemons map[string]*daemon
}

// Start runs the stand-in until Stop.
func Start(ctx context.Context, o Options) (*Sim, error) {
	if o.Client == nil || o.Renderer == nil {
		return nil, errors.New("mcosim: Client and Renderer are required")
	}
	if o.Interval == 0 {
		o.Interval = 20 * time.Millisecond
	}
	if o.StepDelay == 0 {
		o.StepDelay = 30 * time.Millisecond
	}
	if o.OnError == nil {
		o.OnError = func(error) {}
	}
	ctx, cancel := context.WithCancel(ctx)
	s := &Sim{o: o, cancel: cancel, done: make(chan struct{}), daemons: map[string]*daemon{}}
	go s.run(ctx)
	return s, nil
}

// Stop ends the loop and waits for it.
func (s *Sim) Stop() {
	s.cancel()
	<-s.done
}

func (s *Sim) run(ctx context.Context) {
	defer close(s.done)
	t := time.NewTicker(s.o.Interval)
	defer t.Stop()
	for {
		if err := s.pass(ctx); err != nil && ctx.Err() == nil {
			s.o.OnError(err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// pass is one reconcile of every pool.
func (s *Sim) pass(ctx context.Context) error {
	pools := &mcfgv1.MachineConfigPoolList{}
	if err := s.o.Client.List(ctx, pools); err != nil {
		return fmt.Errorf("listing pools: %w", err)
	}
	var errs []error
	for i := range pools.Items {
		p := &pools.Items[i]
		if err := s.renderPool(ctx, p); err != nil {
			errs = append(errs, fmt.Errorf("rendering pool %s: %w", p.Name, err))
			continue
		}
		if err := s.syncNodes(ctx, p); err != nil {
			errs = append(errs, fmt.Errorf("syncing nodes of pool %s: %w", p.Name, err))
		}
	}
	return errors.Join(errs...)
}
