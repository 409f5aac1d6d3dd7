package verdicts

import "testing"

// TestScenarioText: a seed's scenario reads back from its text form, so a
// printed scenario (or a regression case) plays the same steps.
func TestScenarioText(t *testing.T) {
	for s := uint64(1); s <= 200; s++ {
		sc := generate(s)
		back, err := parse(sc.String())
		if err != nil || back.String() != sc.String() {
			t.Errorf("seed %d: %s\nread back (%v): %s", s, sc, err, back)
		}
		if !hasCheck(sc) {
			t.Errorf("seed %d has no check: %s", s, sc)
		}
	}
	for _, r := range regressions {
		if _, err := parse(r.scenario); err != nil {
			t.Errorf("regression %s: %v", r.name, err)
		}
	}
}
