package main

import (
	"fmt"
	"hash/fnv"
	"math"

	"github.com/incidentbot/incidentbot/matcher"
)

// The answer gate as a logistic model (-gate-model): "is this trouble?"
// learned from the same queries the rules were fitted on, over
// matcher.GateFeatures. Each query set counts alike: the tuning set in the
// test library and in the built-in library, and the cross-validated cases'
// texts; within each, the positive queries weigh as much as the chatter in
// all (remediation steps, the cases' weak negatives, a tenth). A query the
// ranking answers with nothing whatever the gate says teaches nothing and
// is left out.
//
// The model is measured before it is used: five folds over the tuning
// queries (by a hash of the text, so that a query leaves both libraries'
// sets together) and the
// cases' own folds; each query is scored by a model trained without its
// fold. The threshold is chosen on those held-out probabilities, by the
// rules' objective without their floor on silence: the share of positive
// queries answered (the mean over the three sets) plus silence on the
// tuning set's chatter (the lower of the two libraries', counted 0.9) and
// on the remediation steps (0.1). The model then is trained on everything.
//
// The rules' floor (silence at least minSilence in both libraries) is not
// kept: cross-validated, the model reaches it only at a threshold that
// answers 0.82 to 0.89 of positive queries, and it answers more and keeps
// more chatter silent than the rules at every threshold from 0.40 to 0.55.

// gateL2 is the penalty on the gate model's weights (not its bias).
const gateL2 = 1e-2

type gateSample struct {
	x      []float64
	y      float64
	weight float64
	group  int // 0 tuning/test, 1 tuning/built-in, 2 cv
	fold   int
	set, j int
}

func gateSamples(ss []scoredSet, reach [][]bool) []gateSample {
	var out []gateSample
	const k = 5
	for i, s := range ss {
		group, fold := min(i, 2), i-2
		var pos, neg float64
		for j, q := range s.queries {
			if !reach[i][j] {
				continue
			}
			if q.chatter {
				neg++
			} else {
				pos++
			}
		}
		for j, q := range s.queries {
			if !reach[i][j] {
				continue
			}
			g := gateSample{x: matcher.GateFeatures(s.scored[j]), group: group, set: i, j: j}
			if i < 2 {
				// By text, so that a query leaves both libraries' sets
				// together.
				h := fnv.New32a()
				h.Write([]byte(q.text))
				g.fold = int(h.Sum32() % k)
			} else {
				g.fold = fold
			}
			if q.chatter {
				g.weight = 1 / neg
				if group == 2 {
					g.weight *= 0.1
				}
			} else {
				g.y, g.weight = 1, 1/pos
			}
			if group == 2 {
				// Five folds make one set.
				g.weight /= k
			}
			out = append(out, g)
		}
	}
	return out
}

// trainGate fits the logistic model by Newton's method on the samples
// keep admits.
func trainGate(ss []gateSample, keep func(gateSample) bool) []float64 {
	n := len(ss[0].x)
	b := make([]float64, n)
	for range 30 {
		g := make([]float64, n)
		h := make([][]float64, n)
		for i := range h {
			h[i] = make([]float64, n)
		}
		for _, s := range ss {
			if !keep(s) {
				continue
			}
			p := prob(b, s.x)
			for i, xi := range s.x {
				g[i] += s.weight * (p - s.y) * xi
				for l, xl := range s.x {
					h[i][l] += s.weight * p * (1 - p) * xi * xl
				}
			}
		}
		for i := 1; i < n; i++ {
			g[i] += gateL2 * b[i]
			h[i][i] += gateL2
		}
		h[0][0] += 1e-9
		step := solve(h, g)
		for i := range b {
			b[i] -= step[i]
		}
	}
	return b
}

// solve returns x with a x = y, by Gaussian elimination with partial
// pivoting (a is small and positive definite).
func solve(a [][]float64, y []float64) []float64 {
	n := len(y)
	m := make([][]float64, n)
	for i := range m {
		m[i] = append(append([]float64{}, a[i]...), y[i])
	}
	for c := range n {
		p := c
		for r := c + 1; r < n; r++ {
			if math.Abs(m[r][c]) > math.Abs(m[p][c]) {
				p = r
			}
		}
		m[c], m[p] = m[p], m[c]
		if m[c][c] == 0 {
			continue
		}
		for r := c + 1; r < n; r++ {
			f := m[r][c] / m[c][c]
			for k := c; k <= n; k++ {
				m[r][k] -= f * m[c][k]
			}
		}
	}
	x := make([]float64, n)
	for r := n - 1; r >= 0; r-- {
		if m[r][r] == 0 {
			continue
		}
		s := m[r][n]
		for k := r + 1; k < n; k++ {
			s -= m[r][k] * x[k]
		}
		x[r] = s / m[r][r]
	}
	return x
}

// prob is the logistic model b's probability for features x.
func prob(b, x []float64) float64 {
	var z float64
	for i, v := range x {
		z += b[i] * v
	}
	return 1 / (1 + math.Exp(-z))
}

// gateFiguresAt are the answered and silence figures per group when each
// reachable sample is shown at p[i] >= t (unreachable positives are never
// answered, unreachable chatter always silent).
func gateFiguresAt(ss []scoredSet, reach [][]bool, samples []gateSample, p []float64, t float64) [3]figures {
	shown := map[[2]int]bool{}
	for i, s := range samples {
		if p[i] >= t {
			shown[[2]int{s.set, s.j}] = true
		}
	}
	var fs [3]figures
	var pos, chat [3]float64
	for i, s := range ss {
		g := min(i, 2)
		for j, q := range s.queries {
			on := shown[[2]int{i, j}]
			if q.chatter {
				chat[g]++
				if !on {
					fs[g].silence++
				}
			} else {
				pos[g]++
				if on {
					fs[g].answered++
				}
			}
		}
	}
	for g := range fs {
		fs[g].answered /= max(pos[g], 1)
		fs[g].silence /= max(chat[g], 1)
	}
	return fs
}

// heldOut scores each sample by a model trained on the other four of the
// five folds, so the figures measured on it are not figures on its own
// training data.
func heldOut(samples []gateSample) []float64 {
	held := make([]float64, len(samples))
	for f := range 5 {
		b := trainGate(samples, func(s gateSample) bool { return s.fold != f })
		for i, s := range samples {
			if s.fold == f {
				held[i] = prob(b, s.x)
			}
		}
	}
	return held
}

// fitGateModel fits the logistic gate on the scored sets and returns w
// with it and its threshold.
func fitGateModel(ss []scoredSet, reach [][]bool, w matcher.Weights) matcher.Weights {
	samples := gateSamples(ss, reach)
	held := heldOut(samples)
	bestT, bestObj := 0.5, -1.0
	for ti := 5; ti <= 95; ti++ {
		t := float64(ti) / 100
		fs := gateFiguresAt(ss, reach, samples, held, t)
		sil := min(fs[0].silence, fs[1].silence)
		obj := (fs[0].answered+fs[1].answered+fs[2].answered)/3 + 0.9*sil + 0.1*fs[2].silence
		if obj > bestObj+1e-9 {
			bestT, bestObj = t, obj
		}
		if *verbose && ti%5 == 0 {
			fmt.Printf("  gate %.2f: cross-validated answered %.3f %.3f %.3f silence %.3f %.3f %.3f\n", t, fs[0].answered, fs[1].answered, fs[2].answered, fs[0].silence, fs[1].silence, fs[2].silence)
		}
	}
	fs := gateFiguresAt(ss, reach, samples, held, bestT)
	fmt.Printf("gate model, cross-validated at %.2f: answered %.3f %.3f %.3f silence %.3f %.3f, on remediation %.3f\n",
		bestT, fs[0].answered, fs[1].answered, fs[2].answered, fs[0].silence, fs[1].silence, fs[2].silence)
	w.GateModel = trainGate(samples, func(gateSample) bool { return true })
	for i := range w.GateModel {
		w.GateModel[i] = math.Round(w.GateModel[i]*1e4) / 1e4
	}
	w.Gate = bestT
	return w
}
