package store

import (
	"context"
	"time"
)

// pacer spreads work at a rate of units per second: each call waits until
// the units paid for by the calls before it are due. Idle time earns no
// credit beyond the present, so a burst after a pause is still paced.
type pacer struct {
	rate float64 // units per second; <= 0: no limit
	next time.Time
}

func (p *pacer) wait(ctx context.Context, units int) error {
	if p.rate <= 0 || units <= 0 {
		return nil
	}
	now := time.Now()
	if p.next.Before(now) {
		p.next = now
	}
	d := p.next.Sub(now)
	p.next = p.next.Add(time.Duration(float64(units) / p.rate * float64(time.Second)))
	if d <= 0 {
		return nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
