package features

import "testing"

func TestFromEnv(t *testing.T) {
	for _, tc := range []struct {
		env  map[string]string
		want bool
	}{
		{nil, true},
		{map[string]string{"PODSYNC_FEATURE_FastCodec": "false"}, false},
		{map[string]string{"PODSYNC_FEATURE_FastCodec": "0"}, false},
		{map[string]string{"PODSYNC_FEATURE_FastCodec": "true"}, true},
		// Not a boolean: logged, and the default kept.
		{map[string]string{"PODSYNC_FEATURE_FastCodec": "off"}, true},
		// The name is spelled exactly, as client-go's gates are.
		{map[string]string{"PODSYNC_FEATURE_FASTCODEC": "false"}, true},
	} {
		got := fromEnv(func(k string) (string, bool) { v, ok := tc.env[k]; return v, ok })
		if got[FastCodec] != tc.want {
			t.Errorf("%v: FastCodec %v, want %v", tc.env, got[FastCodec], tc.want)
		}
	}
}
