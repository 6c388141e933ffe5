package data

import (
	"slices"
	"sort"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	sandboxv1 "github.com/roboco-sandbox/sandbox-controller/api/v1alpha1"
	"github.com/roboco-sandbox/sandbox-controller/internal/engine"
)

// Held keeps in d the checkpoints container holds, and answers those it
// dropped: a checkpoint lives in the container that took it, so one recorded
// in another (the service's container was made again) is gone.
func Held(d *sandboxv1.ServiceData, container string) (lost []string) {
	if d == nil || container == "" {
		return nil
	}
	d.Checkpoints = slices.DeleteFunc(d.Checkpoints, func(c sandboxv1.ServiceCheckpoint) bool {
		if c.ContainerID != container {
			lost = append(lost, c.Name)
			return true
		}
		return false
	})
	if len(d.Checkpoints) == 0 {
		d.Checkpoints = nil
	}
	return lost
}

// Listed makes list, read from container, d's checkpoints, and answers the
// names it held that list does not, but for deleted (the one a
// DeleteCheckpoint removed, "": none).
func Listed(d *sandboxv1.ServiceData, list []engine.Checkpoint, container, deleted string) (lost []string) {
	now := make([]sandboxv1.ServiceCheckpoint, 0, len(list))
	for _, c := range list {
		now = append(now, sandboxv1.ServiceCheckpoint{Name: c.Name, Time: metav1.NewTime(c.Taken), SizeBytes: c.Bytes, ContainerID: container})
	}
	for _, c := range d.Checkpoints {
		if c.Name != deleted && !slices.ContainsFunc(now, func(n sandboxv1.ServiceCheckpoint) bool { return n.Name == c.Name }) {
			lost = append(lost, c.Name)
		}
	}
	d.Checkpoints = nil
	if len(now) > 0 {
		d.Checkpoints = now
	}
	return lost
}

// SummarizeCheckpoints reports in status.checkpoints the checkpoints of the
// services, by name: the services holding one, the first taken, the sizes
// together.
func SummarizeCheckpoints(sb *sandboxv1.Sandbox) {
	byName := map[string]*sandboxv1.SandboxCheckpoint{}
	for _, s := range sb.Status.Services {
		if s.Data == nil {
			continue
		}
		for _, c := range s.Data.Checkpoints {
			sum := byName[c.Name]
			if sum == nil {
				sum = &sandboxv1.SandboxCheckpoint{Name: c.Name, Time: c.Time}
				byName[c.Name] = sum
			}
			sum.Services = append(sum.Services, s.Engine)
			sum.SizeBytes += c.SizeBytes
			if c.Time.Before(&sum.Time) {
				sum.Time = c.Time
			}
		}
	}
	sb.Status.Checkpoints = nil
	for _, c := range byName {
		slices.Sort(c.Services)
		sb.Status.Checkpoints = append(sb.Status.Checkpoints, *c)
	}
	sort.Slice(sb.Status.Checkpoints, func(i, j int) bool { return sb.Status.Checkpoints[i].Name < sb.Status.Checkpoints[j].Name })
}
