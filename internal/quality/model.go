package quality

import (
	"fmt"
	"math"
)

// Model is a softmax regression from bag-of-token features (token counts
// divided by the document's length) to topics, trained with plain
// minibatch SGD at a constant learning rate: the simplest learner whose
// result depends on the order it sees data in. Not safe for concurrent use.
type Model struct {
	K, V int
	W    []float64 // K×V, row-major by topic
	B    []float64 // K
	LR   float64

	// scratch
	logits []float64
	grad   []float64 // K×V accumulated over a batch, touched entries only
	gb     []float64
	touch  []int32 // token ids touched in the batch
	seen   []bool
}

// NewModel returns a zero model (every topic equally likely).
func NewModel(topics, vocab int, lr float64) *Model {
	return &Model{
		K: topics, V: vocab, LR: lr,
		W: make([]float64, topics*vocab), B: make([]float64, topics),
		logits: make([]float64, topics), grad: make([]float64, topics*vocab),
		gb: make([]float64, topics), seen: make([]bool, vocab),
	}
}

// probs fills m.logits with the model's topic probabilities for doc.
func (m *Model) probs(doc []int32) {
	inv := 1 / float64(max(len(doc), 1))
	copy(m.logits, m.B)
	for _, t := range doc {
		for k := 0; k < m.K; k++ {
			m.logits[k] += m.W[k*m.V+int(t)] * inv
		}
	}
	mx := math.Inf(-1)
	for _, z := range m.logits {
		mx = max(mx, z)
	}
	var sum float64
	for k, z := range m.logits {
		e := math.Exp(z - mx)
		m.logits[k] = e
		sum += e
	}
	for k := range m.logits {
		m.logits[k] /= sum
	}
}

func (m *Model) check(doc []int32, label int32) error {
	if label < 0 || int(label) >= m.K {
		return fmt.Errorf("quality: label %d out of [0, %d)", label, m.K)
	}
	for _, t := range doc {
		if t < 0 || int(t) >= m.V {
			return fmt.Errorf("quality: token %d out of [0, %d)", t, m.V)
		}
	}
	return nil
}

// Step takes one SGD step on the batch (mean cross-entropy gradient) and
// returns the batch's mean loss before the step. Labels or tokens out of
// range are errors and leave the model unchanged.
func (m *Model) Step(docs [][]int32, labels []int32) (float64, error) {
	if len(docs) != len(labels) || len(docs) == 0 {
		return 0, fmt.Errorf("quality: batch of %d documents and %d labels", len(docs), len(labels))
	}
	for i := range docs {
		if err := m.check(docs[i], labels[i]); err != nil {
			return 0, err
		}
	}
	m.touch = m.touch[:0]
	var loss float64
	for i, doc := range docs {
		m.probs(doc)
		y := int(labels[i])
		loss -= math.Log(max(m.logits[y], 1e-300))
		m.logits[y]--
		inv := 1 / float64(max(len(doc), 1))
		for k, g := range m.logits {
			m.gb[k] += g
		}
		for _, t := range doc {
			if !m.seen[t] {
				m.seen[t] = true
				m.touch = append(m.touch, t)
			}
			for k, g := range m.logits {
				m.grad[k*m.V+int(t)] += g * inv
			}
		}
	}
	scale := m.LR / float64(len(docs))
	for k := range m.gb {
		m.B[k] -= scale * m.gb[k]
		m.gb[k] = 0
	}
	for _, t := range m.touch {
		m.seen[t] = false
		for k := 0; k < m.K; k++ {
			i := k*m.V + int(t)
			m.W[i] -= scale * m.grad[i]
			m.grad[i] = 0
		}
	}
	return loss / float64(len(docs)), nil
}

// Eval returns the mean cross-entropy (nats) and the accuracy on a set.
func (m *Model) Eval(docs [][]int32, labels []int32) (loss, acc float64, err error) {
	if len(docs) != len(labels) || len(docs) == 0 {
		return 0, 0, fmt.Errorf("quality: evaluation set of %d documents and %d labels", len(docs), len(labels))
	}
	right := 0
	for i, doc := range docs {
		if err := m.check(doc, labels[i]); err != nil {
			return 0, 0, err
		}
		m.probs(doc)
		y := int(labels[i])
		loss -= math.Log(max(m.logits[y], 1e-300))
		best := 0
		for k, p := range m.logits {
			if p > m.logits[best] {
				best = k
			}
		}
		if best == y {
			right++
		}
	}
	n := float64(len(docs))
	return loss / n, float64(right) / n, nil
}
