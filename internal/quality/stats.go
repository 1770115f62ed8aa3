package quality

import (
	"math"
	"slices"
)

// OrderStats describes a delivery order: which original row came at each
// position, and how batches mix pages and topics. The zero value is ready.
type OrderStats struct {
	rows                []int64 // original row of each delivered row, in delivery order
	batches             int
	pagesSum, topicsSum int
	pageSeen, topicSeen map[uint64]bool
}

// AddBatch records one batch: each row's original (file-order) row number,
// the page it came from and its label. The slices are not retained.
func (s *OrderStats) AddBatch(rows []int64, pages []uint64, labels []int32) {
	if s.pageSeen == nil {
		s.pageSeen, s.topicSeen = map[uint64]bool{}, map[uint64]bool{}
	}
	s.rows = append(s.rows, rows...)
	s.batches++
	clear(s.pageSeen)
	clear(s.topicSeen)
	for _, p := range pages {
		s.pageSeen[p] = true
	}
	for _, l := range labels {
		s.topicSeen[uint64(l)] = true
	}
	s.pagesSum += len(s.pageSeen)
	s.topicsSum += len(s.topicSeen)
}

// Rows is the number of rows recorded.
func (s *OrderStats) Rows() int { return len(s.rows) }

// Batches is the number of batches recorded.
func (s *OrderStats) Batches() int { return s.batches }

// PagesPerBatch is the mean number of distinct source pages in a batch.
func (s *OrderStats) PagesPerBatch() float64 { return ratio(s.pagesSum, s.batches) }

// TopicsPerBatch is the mean number of distinct labels in a batch.
func (s *OrderStats) TopicsPerBatch() float64 { return ratio(s.topicsSum, s.batches) }

func ratio(a, b int) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

// RankCorrelation is Spearman's ρ between delivery position and original
// row: 1 for file order, about 0 for a uniform shuffle, NaN for fewer than
// two rows. Repeated rows get their average rank.
func (s *OrderStats) RankCorrelation() float64 {
	return Spearman(s.rows)
}

// Spearman returns the rank correlation between i and xs[i].
func Spearman(xs []int64) float64 {
	n := len(xs)
	if n < 2 {
		return math.NaN()
	}
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int {
		switch {
		case xs[a] < xs[b]:
			return -1
		case xs[a] > xs[b]:
			return 1
		}
		return 0
	})
	rank := make([]float64, n)
	for i := 0; i < n; {
		j := i
		for j+1 < n && xs[idx[j+1]] == xs[idx[i]] {
			j++
		}
		r := float64(i+j) / 2 // ties share their mean rank
		for k := i; k <= j; k++ {
			rank[idx[k]] = r
		}
		i = j + 1
	}
	// Pearson between position p = i and rank[i].
	mean := float64(n-1) / 2
	var sxy, sxx, syy float64
	for i, r := range rank {
		dx, dy := float64(i)-mean, r-mean
		sxy += dx * dy
		sxx += dx * dx
		syy += dy * dy
	}
	if syy == 0 {
		return math.NaN()
	}
	return sxy / math.Sqrt(sxx*syy)
}
