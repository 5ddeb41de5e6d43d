package reference

import "sort"

func sortViolations(v []Violation) {
	sort.SliceStable(v, func(i, j int) bool {
		if v[i].To != v[j].To {
			return v[i].To < v[j].To
		}
		return v[i].Key < v[j].Key
	})
}
