package verdicts

import "testing"

func TestPeek(t *testing.T) {
	for s := uint64(1); s <= 12; s++ {
		sc := generate(s)
		t.Logf("%d: %s", s, sc)
		back, err := parse(sc.String())
		if err != nil || back.String() != sc.String() {
			t.Errorf("round trip %v: %s", err, back)
		}
	}
}
