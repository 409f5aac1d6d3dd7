package health

import (
	"context"
	"errors"
	"fmt"
	"math"
	"regexp"
	"regexp/syntax"
	"strings"
	"sync"
	"time"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
	"github.com/google/cel-go/interpreter"
)

// The bounds of one rule's evaluation. The run's event loop evaluates the
// rules, and it also owns stdout, --timeout and the signals: whatever an
// object's status holds, a rule gives the loop back within about
// interruptEvery iterations of the run's end, and within evalTimeout.
const (
	// evalTimeout bounds one evaluation of a rule (all its expressions).
	evalTimeout = time.Second
	// interruptEvery is how many iterations of a comprehension (all,
	// exists, filter, map) run between two looks at the deadline.
	interruptEvery = 100
	// maxMatchWork bounds one regular expression match: the string's
	// length times the size of the compiled pattern. RE2 matches in time
	// linear in both, but one match cannot be interrupted.
	maxMatchWork = 50_000_000
)

// evalContext is the context of one evaluation: the run's, with the
// evaluation's deadline.
func evalContext(ctx context.Context) (context.Context, context.CancelFunc) {
	if ctx == nil {
		ctx = context.Background()
	}
	return context.WithTimeout(ctx, evalTimeout)
}

// stopped says why an evaluation that failed was stopped, or "" when it
// failed on its own (a missing field, a type error).
func stopped(run, eval context.Context, err error, took time.Duration) string {
	switch {
	case run != nil && run.Err() != nil:
		return fmt.Sprintf("was stopped unfinished when the run ended (it had run for %s)", took.Round(time.Millisecond))
	case errors.Is(err, context.DeadlineExceeded) || eval.Err() != nil:
		return fmt.Sprintf("took too long: it was stopped after %s; the rule waits", evalTimeout)
	case strings.Contains(err.Error(), "cost limit exceeded"):
		return fmt.Sprintf("took too long: it exceeded the cost limit of %d operations; the rule waits", costLimit)
	}
	return ""
}

// programOptions bound every compiled expression: a cost limit, string
// functions costed by the length they go over, interrupts at the
// deadline, and regular expressions refused past maxMatchWork.
func programOptions() []cel.ProgramOption {
	return []cel.ProgramOption{
		cel.CostLimit(costLimit),
		cel.CostTracking(stringCost{}),
		cel.InterruptCheckFrequency(interruptEvery),
		// By overload, so that they take precedence over the standard
		// library's (by function) that OptOptimize adds.
		cel.OptimizeRegex(
			&interpreter.RegexOptimization{Function: "matches", OverloadID: "matches", RegexIndex: 1, Factory: constantMatch},
			&interpreter.RegexOptimization{Function: "matches", OverloadID: "matches_string", RegexIndex: 1, Factory: constantMatch},
		),
	}
}

// matchOverloads bind CEL's matches to boundedMatch for a pattern that
// is not a constant (a constant one is compiled once by constantMatch).
func matchOverloads() cel.EnvOption {
	return cel.Function("matches",
		cel.Overload("matches", []*cel.Type{cel.StringType, cel.StringType}, cel.BoolType),
		cel.MemberOverload("matches_string", []*cel.Type{cel.StringType, cel.StringType}, cel.BoolType),
		cel.SingletonBinaryBinding(func(s, p ref.Val) ref.Val {
			str, ok1 := s.(types.String)
			pat, ok2 := p.(types.String)
			if !ok1 || !ok2 {
				return types.NoSuchOverloadErr()
			}
			re, err := patterns.compile(string(pat))
			if err != nil {
				return types.NewErr("%v", err)
			}
			return boundedMatch(re, string(str))
		}))
}

// constantMatch compiles a constant pattern once, for the life of the
// program.
func constantMatch(call interpreter.InterpretableCall, pattern string) (interpreter.InterpretableCall, error) {
	re, err := compilePattern(pattern)
	if err != nil {
		return nil, err
	}
	return interpreter.NewCall(call.ID(), call.Function(), call.OverloadID(), call.Args(), func(values ...ref.Val) ref.Val {
		if len(values) != 2 {
			return types.NoSuchOverloadErr()
		}
		s, ok := values[0].(types.String)
		if !ok {
			return types.NoSuchOverloadErr()
		}
		return boundedMatch(re, string(s))
	}), nil
}

// pattern is a compiled regular expression and the size of its program.
type pattern struct {
	re    *regexp.Regexp
	insts int
}

func compilePattern(src string) (pattern, error) {
	re, err := regexp.Compile(src)
	if err != nil {
		return pattern{}, err
	}
	parsed, err := syntax.Parse(src, syntax.Perl)
	if err != nil {
		return pattern{}, err
	}
	prog, err := syntax.Compile(parsed.Simplify())
	if err != nil {
		return pattern{}, err
	}
	return pattern{re: re, insts: len(prog.Inst)}, nil
}

// boundedMatch matches s, or refuses a match that could hold the loop.
func boundedMatch(p pattern, s string) ref.Val {
	if work := (len(s) + 1) * p.insts; work > maxMatchWork {
		return types.NewErr("a regular expression of %d steps over a string of %d bytes is more than podsync matches (%d bytes × steps)",
			p.insts, len(s), maxMatchWork)
	}
	return types.Bool(p.re.MatchString(s))
}

// patternCache holds the patterns that are not constants, a bounded
// number of them.
type patternCache struct {
	mu sync.Mutex
	m  map[string]pattern
}

var patterns = &patternCache{m: map[string]pattern{}}

func (c *patternCache) compile(src string) (pattern, error) {
	c.mu.Lock()
	p, ok := c.m[src]
	c.mu.Unlock()
	if ok {
		return p, nil
	}
	p, err := compilePattern(src)
	if err != nil {
		return pattern{}, err
	}
	c.mu.Lock()
	if len(c.m) >= 256 {
		clear(c.m)
	}
	c.m[src] = p
	c.mu.Unlock()
	return p, nil
}

// stringCost costs the functions of the strings and encoders extensions,
// and size, by the length of what they read and build (CEL's default
// counts them as one operation each, whatever the length): a rule that
// builds or scans huge strings reaches the cost limit.
type stringCost struct{}

// linear are the functions whose work grows with their strings.
var linear = map[string]bool{
	"charAt": true, "indexOf": true, "lastIndexOf": true, "lowerAscii": true, "upperAscii": true,
	"replace": true, "split": true, "substring": true, "trim": true, "join": true, "reverse": true,
	"format": true, "strings.quote": true, "base64.encode": true, "base64.decode": true, "size": true,
}

func (stringCost) CallCost(function, _ string, args []ref.Val, result ref.Val) *uint64 {
	if !linear[function] {
		return nil
	}
	if _, isString := args[0].(types.String); function == "size" && (len(args) != 1 || !isString) {
		return nil
	}
	n := length(result)
	for _, a := range args {
		n += length(a)
	}
	c := 1 + uint64(math.Ceil(float64(n)*0.1))
	return &c
}

// length is the length of a string or bytes value, or a list's size
// (join reads its items); 0 for anything else.
func length(v ref.Val) uint64 {
	switch x := v.(type) {
	case types.String:
		return uint64(len(x))
	case types.Bytes:
		return uint64(len(x))
	case traits.Lister:
		if n, ok := x.Size().(types.Int); ok && n > 0 {
			return uint64(n)
		}
	}
	return 0
}
