package eval_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/incidentbot/incidentbot/cases"
	"github.com/incidentbot/incidentbot/matcher/eval"
)

// A held-out set is frozen: it is written blind, before the matcher
// changes it measures, from the taxonomy and the built-in cases apart from
// the phrase lists, the weights and the other sets, and pinned before the
// matcher is run on it. It must not be edited, and its misses must not be
// inspected while the matcher is tuned (the eval command reports it in
// aggregate only). A change to a set needs a new set written the same way,
// not an edit of the old one; once a set has been run on the matcher, a
// later change needs a new set for a blind figure.
type heldoutSet struct {
	name       string // the name go run ./matcher/cmd/eval -set gives it
	sha256     string // the pinned SHA-256 of the file
	minQueries int    // the fewest queries TestHeldoutWellFormed accepts
	floors     floors // what TestHeldoutFloors holds; a zero field is the target (floors_test.go)
}

// path is the set's file, matcher/testdata/eval/<name>.jsonl.
func (h heldoutSet) path() string { return "../testdata/eval/" + h.name + ".jsonl" }

// heldoutSets are the frozen held-out sets, oldest first. A new set is a
// new row at the end; its floors are the targets, and, where its first run
// misses one, that figure less 0.02 (a gap plus 0.02), with the figure.
var heldoutSets = []heldoutSet{
	// The first set: written before the matcher change it measures, from the
	// taxonomy's definitions and the built-in cases' tags, without running
	// the matcher on it.
	{"heldout", "20dd09f15e180486bc9d523ee123a292a945b51b105bc46c6e364c07a5d7d235", 170, floors{}},
	// Written after the first had been run while the ranking was tuned, so
	// that a blind figure exists again: from the taxonomy's definitions and
	// the built-in cases' tags, apart from the phrase lists, the weights and
	// the other sets.
	{"heldout2", "fdc9a5dfb5df992edb41685759b07fa376bec8fd80572cb37823aa67840f09df", 160, floors{}},
	// Written once both earlier sets had been run on the matcher: from the
	// taxonomy's ids and definitions and the built-in cases' facts and tags.
	{"heldout3", "7ec08231bc5351cfb2b1637326ec4cfba792d0d55ae0c7709280db244b79e68e", 200, floors{}},
	// Written once all three earlier sets had been run: from the taxonomy's
	// ids and definitions and the built-in cases' facts.
	{"heldout4", "af40ccc519e124955fba10caebbf2106ba53e22720cc72b3bd7b2bd529a5028d", 210, floors{}},
	// Written as the fourth, once all four earlier sets had been run.
	{"heldout5", "4a01113074ef875996eb1206cc49f11e4d8a588b82ae9b22ef4a2ce9f7f2eef8", 210, floors{}},
	// Written as the fifth, once all five earlier sets had been run.
	{"heldout6", "b542049eb14ac990cf6f3abf2d096fc50dd1e1d69459b19df4629a00ff8c635f", 210, floors{
		koEnGap: 0.093, // measured 0.073 (ko 0.938, en 0.865) plus 0.02
	}},
	// Written as the sixth, once all six earlier sets had been run.
	{"heldout7", "e319643398d5e26aa4dbf717a29838354e7b54e8e2a807c6019e5356ebcc83a0", 210, floors{}},
	// Written once all seven earlier sets had been run, for the built-in
	// messages the trouble model learns from: from the taxonomy's ids and
	// the built-in cases' facts alone, apart from every other set.
	{"heldout8", "6e7cc2c90d5e546d85f49d915fb673410de0b0b878d0940a9c9f8b6bf3b167f8", 210, floors{}},
	// Written as the eighth, before the tag model learned from the built-in
	// messages' tags, as the eighth was before the trouble model learned
	// from the messages.
	{"heldout9", "52bd5e38aae5a093caa8dfb8fc6d4087de50f0725a29f217d2262cb44e8a64c8", 210, floors{
		koEnGap: 0.070, // measured 0.050 (ko 0.948, en 0.898) plus 0.02
	}},
	// Written as the ninth, before the built-in messages grew from 1,720 to
	// 2,920.
	{"heldout10", "d2115ba9fa9a2e099e5643534962e2684d09b290df869c7cbf70fa0d242a5683", 210, floors{}},
	// Written as the tenth, before the ranking's changes it measures.
	{"heldout11", "e24cfaf5e3c70bb143621b585a6ab7034da66a821f31da116ad6746b6d337e70", 210, floors{}},
	// Written as the eleventh, before the tag model's changes it measures.
	{"heldout12", "6cf6ba29ff928b98ebb948a0e27f2557327060e39ebd3f3484ea1be8e1e44560", 210, floors{}},
	// Written as the twelfth, before the changes it measures.
	{"heldout13", "f2e989237cfdb4f6a90a4a31b71914dee01c1eb14e6d7e0f523a9a213b0ef5ef", 210, floors{
		koEnGap: 0.077, // measured 0.057 (ko 0.932, en 0.875) plus 0.02
	}},
	// Written as the thirteenth, before the change it measures.
	{"heldout14", "cce8329750885e84c73cfbc1979a78b0a8db9be3ce0f92ca1b7cf30fb3f5279c", 210, floors{}},
	// Written as the fourteenth; its first run was a blind measure of the
	// matcher as it then stood, with no change after it.
	{"heldout15", "f58c4ad4077247e0178cb3425372904f6ef5c017261476319eb3f9f2228f1e62", 210, floors{}},
	// Written as the fifteenth, from gold cases no earlier set had used,
	// before the change it measures.
	{"heldout16", "2918b0282aea0f8eab5f5e31ceddf47311d0f233feb3488218ae1b9e471d712c", 210, floors{
		koEnGap: 0.121, // measured 0.101 (ko 0.939, en 0.838) plus 0.02
	}},
	// Written beside the sixteenth, from other gold cases no earlier set had
	// used, before the change it measures.
	{"heldout17", "297675196c1a3c602b5d888448cfdd3614d184949931d4f15915dd8ce625cee4", 210, floors{}},
	// Written once the sixteenth and seventeenth had been run, from gold
	// cases no earlier set had used, before the change it measures.
	{"heldout18", "eff49907b54454bf110dc7569a22793db6c1e7e1df784ec87a0ab3b7e4559aa1", 210, floors{
		koEnGap: 0.071, // measured 0.051 (ko 0.901, en 0.850) plus 0.02
	}},
	// Written beside the eighteenth, from other unused gold cases, before
	// the change it measures.
	{"heldout19", "b442fabaa69575f46fa22c36c40950453feca3cd84a213bfc86207cc2fc855b4", 210, floors{
		silence: 0.927, // measured 0.947 (36 of 38) less 0.02
	}},
	// Written once the built-in messages had grown to 5,443, from gold cases
	// no earlier set had used; its first run measured the matcher as it then
	// stood.
	{"heldout20", "689f11d59cdcaa35eea422c315f39a2160adbba5e97640d9d007333cc2c17ba2", 210, floors{
		silence: 0.848, // measured 0.868 (33 of 38) less 0.02
	}},
	// Written beside the twentieth, from other unused gold cases.
	{"heldout21", "47451c26d7adc3055784fdda99b12c613a09726d5522c8deeb7b64daac1f6564", 210, floors{
		silence: 0.875, // measured 0.895 (34 of 38) less 0.02
		koEnGap: 0.109, // measured 0.089 (ko 0.989, en 0.900) plus 0.02
	}},
	// Written beside the twentieth, from other unused gold cases, before the
	// change it measures.
	{"heldout22", "96e321224f1ed50d95b208c52eea4a23eed7233c7cd9570125eb1e15f3bd8f70", 210, floors{}},
	// Written beside the twenty-second, from other unused gold cases.
	{"heldout23", "95897965342737af6cc146ad9b09e6feb8d25475a655ec90a9d886695f7d0724", 210, floors{
		silence: 0.927, // measured 0.947 (36 of 38) less 0.02
	}},
	// Written once the twentieth to twenty-third had been run, from the
	// last gold cases no earlier set had used, before the change it
	// measures.
	{"heldout24", "f6cbf2805e769ee8a19c2c69fd97e595c6ab413cb6859db674a98ba7a61d4cb6", 210, floors{}},
	// Written beside the twenty-fourth, from the other half of those cases.
	{"heldout25", "5e078dc7fb70d3f4483aae207b1ef5eb41373a96a4e70c9f314c90d042b1aa67", 210, floors{
		silence: 0.927, // measured 0.947 (36 of 38) less 0.02
	}},
	// Written once every built-in case but nine had been some set's gold
	// case, so from cases the sets before had used once, each with new
	// text; before the change it first measured.
	{"heldout26", "887c21e0b9918ab4aa3f7d0e8205a3d2d8ffd92450fdcc8e7321e4d477b492de", 210, floors{
		silence: 0.901, // measured 0.921 (35 of 38) less 0.02
	}},
	// Written beside the twenty-sixth, from other such cases.
	{"heldout27", "db5ca16915e18df73467a17ab055b250de7f63a8a2a033fa50a2398066b53859", 210, floors{
		koEnGap: 0.083, // measured 0.063 (ko 0.846, en 0.909) plus 0.02
	}},
	// Written beside the twenty-sixth, from other such cases.
	{"heldout28", "5ce243028451e9340ca1047e994edb2a5733e3c981cf430d8bd49a35cde604e6", 210, floors{}},
	// Written beside the twenty-sixth, from other such cases.
	{"heldout29", "59a0f71772d306b2847eacdcd77480a70d6ee6836981b1e4eef09059ea6d086f", 210, floors{
		koEnGap: 0.074, // measured 0.054 (ko 0.860, en 0.914) plus 0.02
	}},
	// Written once the built-in messages had grown to 7,243, from other
	// cases the sets before had used once, before the change it first
	// measured.
	{"heldout30", "cdca5791d55ab2c6d7527e15fdc2c5fd555acd2e93dd0e67814eab1447bbc20a", 210, floors{
		silence: 0.927, // measured 0.947 (36 of 38) less 0.02
	}},
	// Written beside the thirtieth, from other such cases.
	{"heldout31", "055c3acc85b5501808e629841051dfe2d4bb68ddf98df35674c84b7cefbe23f1", 210, floors{}},
	// Written beside the thirtieth, from other such cases.
	{"heldout32", "f45c2d2b99d6c2a278fce25d64000f708fc004d4698112f18ba3f8106946acf3", 210, floors{
		koEnGap: 0.071, // measured 0.051 (ko 0.828, en 0.879) plus 0.02
	}},
	// Written beside the thirtieth, from other such cases.
	{"heldout33", "d2564015c67126a2a9decacb565c12cb81a338ea5973853d5923b86b837d43b3", 210, floors{
		koEnGap: 0.110, // measured 0.090 (ko 0.977, en 0.887) plus 0.02
	}},
	// Written once the thirtieth to thirty-third had been run, from other
	// cases the sets before had used once, before the change it first
	// measured.
	{"heldout34", "bc472d7e7259f7f95859d95a71bb47ac9ebcda60740602e9484a4d4fc60f4d45", 210, floors{}},
	// Written beside the thirty-fourth, from other such cases.
	{"heldout35", "e31d5bf3f7aa1a67c3327e904190af81cd457bc58d95e86c7d3d461f7e4bfa3f", 210, floors{}},
	// Written beside the thirty-fourth, from other such cases.
	{"heldout36", "2e2412828ca9306c3138358768b83aa81e504ed5097a397a291ff51792753f2d", 210, floors{}},
	// Written beside the thirty-fourth, from other such cases.
	{"heldout37", "14c0228393245ddcfd71ad09b43cee380b83db0f17707123a764a46b98d9ebc0", 210, floors{
		koEnGap: 0.087, // measured 0.067 (ko 0.900, en 0.833) plus 0.02
	}},
	// Written for the ranking's refit on queries about known incidents, with
	// more of them (at least 78 of a set), before it was run.
	{"heldout38", "5ff0f8090fa6e7a7d0aa5ed735f8127d8d59cf29b921581d6dc294a5671b1191", 215, floors{
		silence: 0.927, // measured 0.947 (36 of 38) less 0.02
	}},
	// Written beside the thirty-eighth, from other such cases.
	{"heldout39", "f0ae15d53625a215a657c8000f446b0deb36b3661c7128bcdf3d9285fc0f640f", 215, floors{}},
	// Written beside the thirty-eighth, from other such cases.
	{"heldout40", "66c024a774c1f63991339832273285c7d16b285aed73a172f15a64350da8537d", 215, floors{
		silence: 0.875, // measured 0.895 (34 of 38) less 0.02
	}},
	// Written beside the thirty-eighth, from other such cases.
	{"heldout41", "55e082dade6a857133947be1fd87e296ab6fa044e7a7f20c10d3117ea2798c03", 215, floors{
		silence: 0.848, // measured 0.868 (33 of 38) less 0.02
		koEnGap: 0.119, // measured 0.099 (ko 0.988, en 0.889) plus 0.02
	}},
	// Written as the thirty-eighth, once it had judged a change, for the
	// next one: a model of whether a text names the incident it is about.
	{"heldout42", "df4ae6378ee573a5bd45254eaf432c9f858b887b89a06c959d6ed9927e3f1cb4", 215, floors{
		silence: 0.927, // measured 0.947 (36 of 38) less 0.02
	}},
	// Written beside the forty-second, from other such cases.
	{"heldout43", "f3da72cfc30a7861444a978aea8585a9af62214f360ce2caa288e7e61156adbf", 215, floors{
		koEnGap: 0.086, // measured 0.066 (ko 0.936, en 0.870) plus 0.02
	}},
	// Written beside the forty-second, from other such cases.
	{"heldout44", "2ab8072c0317345e89138d333efff1853ae29c2a4522bb7bd7ba6270dfcb4ff6", 215, floors{}},
	// Written beside the forty-second, from other such cases.
	{"heldout45", "bf98330c027304240a84ec7ea9b6d9f20ee393294f81140e5c7c025d136fb354", 215, floors{}},
	// Written as the forty-sixth, once the forty-second to forty-fifth had
	// judged a change, for the next ones: tags voted by the nearest cases,
	// and the named-incident model's second trial.
	{"heldout46", "16c2865dc9f1ab064a633aeb926d40ea114a6222c1fdcbbd8542fe5f5a4a1241", 215, floors{
		koEnGap: 0.089, // measured 0.069 (ko 0.976, en 0.907) plus 0.02
	}},
	// Written beside the forty-sixth, from other such cases.
	{"heldout47", "b46db8603a679d0329b277aef8e23ad33a3dc820c6d1d158e0d265c8ab197805", 215, floors{
		silence: 0.901, // measured 0.921 (35 of 38) less 0.02
		koEnGap: 0.108, // measured 0.088 (ko 0.968, en 0.880) plus 0.02
	}},
	// Written beside the forty-sixth, from other such cases.
	{"heldout48", "82f0dff6d12da61da9078f7ba85229005fd904702a7fe7ae9a5959cd90e75692", 215, floors{
		ndcgOverBaseline: 0.129, // measured 0.149 (nDCG@5 0.829, baseline 0.680) less 0.02
		silence:          0.848, // measured 0.868 (33 of 38) less 0.02
	}},
	// Written beside the forty-sixth, from other such cases.
	{"heldout49", "0529bd53d1f24a918b65cf3b22e1c4127fea2eeb1b2e427216366176995b9fe8", 215, floors{
		ndcgOverBaseline: 0.083, // measured 0.103 (nDCG@5 0.817, baseline 0.714) less 0.02
	}},
	// Written as the fiftieth, once the forty-sixth to forty-ninth had judged
	// two changes, for a third check of the named model and a variant of it
	// that counts only from a least probability; each with at least 40
	// positive queries about no known incident.
	{"heldout50", "52479f8884005439a28225c80d8e87799fcb1f135bc6c41fc8116923b5847d68", 215, floors{
		koEnGap: 0.095, // measured 0.075 (ko 0.956, en 0.881) plus 0.02
	}},
	// Written beside the fiftieth, from other such cases.
	{"heldout51", "5b389922575519947a2e97ff3167712127d4e60ee24ab8e2768e02d5d6960c8f", 215, floors{
		silence: 0.927, // measured 0.947 (36 of 38) less 0.02
		koEnGap: 0.076, // measured 0.056 (ko 0.938, en 0.882) plus 0.02
	}},
	// Written beside the fiftieth, from other such cases.
	{"heldout52", "c787b1f2a1e6ab507d2fa1cd99f4248950aa655570e8ebbbb3493f482c81991f", 215, floors{}},
	// Written beside the fiftieth, from other such cases.
	{"heldout53", "8b140c89ec6f2a00d6aff16f8bb5494ac74d06a313c3b7eb8b72383962bed3c2", 215, floors{
		ndcgOverBaseline: 0.125, // measured 0.145 (nDCG@5 0.811, baseline 0.666) less 0.02
	}},
	// Written as the fifty-fourth, once all earlier sets had been run, to
	// judge the gate's reading of a text's likeliest sentence: four
	// writers, each on its own quarter of the built-in cases and its own
	// systems (shopping and payments; data platforms; networks and games;
	// banking, logins and developer platforms).
	{"heldout54", "dcd818c4b40fafd4c7caa6a32826f39c65a776e87a1b7fbc59ef8ae56fe3e891", 200, floors{
		koEnGap: 0.077, // measured 0.057 (ko 0.973, en 0.917) plus 0.02
	}},
	// Written beside the fifty-fourth, from another quarter of the cases.
	{"heldout55", "8fe161baaace8a39519f45fdbcb3d4585e486e869176bda41b23e7bccd838ed3", 200, floors{
		koEnGap: 0.084, // measured 0.064 (ko 0.960, en 0.896) plus 0.02
	}},
	// Written beside the fifty-fourth, from another quarter of the cases.
	{"heldout56", "5c9f1daa7eebcae7cbf3893c3dffa43406213921fc1cdcf46e423db787aff253", 200, floors{
		ndcgOverBaseline: 0.13,  // measured 0.150 (nDCG@5 0.798, baseline 0.648; just under 0.15 unrounded) less 0.02
		silence:          0.927, // measured 0.947 (36 of 38) less 0.02
		koEnGap:          0.113, // measured 0.093 (ko 0.947, en 0.854) plus 0.02
	}},
	// Written beside the fifty-fourth, from the last quarter of the cases.
	{"heldout57", "05294dc2b6ea768b6137c3bca208615b9ee00a15c21365cf1066ef229ce66a2f", 200, floors{}},
	// Written as the fifty-eighth, once the fifty-fourth to fifty-seventh
	// had judged one change to the gate, to judge a second: four more
	// writers, each on a quarter of the built-in cases and systems of its
	// own (health and travel bookings; streaming and media; delivery and
	// device fleets; developer tools, messaging and collaboration).
	{"heldout58", "9219045ed1e1acd65bc884d5176e6c53418963753712c180f236d907d5e001ec", 200, floors{
		koEnGap: 0.084, // measured 0.064 (ko 0.960, en 0.896) plus 0.02
	}},
	// Written beside the fifty-eighth, from another quarter of the cases.
	{"heldout59", "d2075f840fdb9be99b86fb5114469489ecf1551ce66f08bd468a6263d8b27475", 200, floors{}},
	// Written beside the fifty-eighth, from another quarter of the cases.
	{"heldout60", "81193e5323215f947adc191f61729c75109b555dd00337ca72fa86d4abbdfba9", 200, floors{
		ndcgOverBaseline: 0.124, // measured 0.144 (nDCG@5 0.791, baseline 0.647) less 0.02
		silence:          0.927, // measured 0.947 (36 of 38) less 0.02
		koEnGap:          0.096, // measured 0.076 (ko 0.920, en 0.844) plus 0.02
	}},
	// Written beside the fifty-eighth, from the last quarter of the cases.
	{"heldout61", "ad5ac28023096d638fcf813125d82ce1a2cbbe1b3ed9c575c6b1071f3550104c", 200, floors{}},
	// Written as the sixty-second, once the fifty-eighth to sixty-first had
	// judged a second change to the gate, to judge the logistic tag model:
	// four more writers, each on a quarter of the built-in cases that
	// earlier sets had used least, blind to the matcher and the other sets.
	{"heldout62", "419ba10c8cbfb6d263513f1e745b8298c89d0237321f12d12401ada649565a15", 200, floors{
		koEnGap: 0.153, // measured 0.133 (ko 0.987, en 0.854) plus 0.02
	}},
	// Written beside the sixty-second, from another quarter of the cases.
	{"heldout63", "3822c88ca7a80a81b0d0308ed43776c1b57292854a7ddf5c094bd66b0ba8cb37", 200, floors{
		hit3:      0.805,                               // measured 0.825 less 0.02
		styleHit3: map[string]float64{"status": 0.655}, // measured 0.675 (27 of 40) less 0.02
		koEnGap:   0.071,                               // measured 0.051 (ko 0.853, en 0.802) plus 0.02
	}},
	// Written beside the sixty-second, from another quarter of the cases.
	{"heldout64", "1170ef861844601705f30eb5bfc08f0c8b88dc48af8d1680e91540d426eb5496", 200, floors{
		koEnGap: 0.080, // measured 0.060 (ko 0.893, en 0.833) plus 0.02
	}},
	// Written beside the sixty-second, from the last quarter of the cases.
	{"heldout65", "e15b9f6e16be019a829bc82cafde575465358c33d4cbc2fead26bef992dd9e7e", 200, floors{
		hit3:    0.828, // measured 0.848 less 0.02
		koEnGap: 0.101, // measured 0.081 (ko 0.893, en 0.812) plus 0.02
	}},
	// Written as the sixty-sixth, once the sixty-second to sixty-fifth had
	// judged the logistic tag model, to judge both tag models together:
	// four more writers, each on a quarter of the next least used cases.
	{"heldout66", "3e6254a37923247fe111a8d404129f847bd834ffd8c50304857588b14cdd9883", 200, floors{
		koEnGap: 0.120, // measured 0.100 (ko 0.933, en 0.833) plus 0.02
	}},
	// Written beside the sixty-sixth, from another quarter of the cases.
	{"heldout67", "dcc976a83e934848792f2ae49f83471a8fbda76d1e18a43c551b93454bdf5936", 200, floors{
		ndcgOverBaseline: 0.120, // measured 0.140 (nDCG@5 0.843, baseline 0.703) less 0.02
		silence:          0.927, // measured 0.947 (36 of 38) less 0.02
		koEnGap:          0.099, // measured 0.079 (ko 0.933, en 0.854) plus 0.02
	}},
	// Written beside the sixty-sixth, from another quarter of the cases.
	{"heldout68", "39613d3bd0a29cbde26a73ddba8aab16001ddcfbf6e1595fff040b21927b7a50", 200, floors{
		styleHit3: map[string]float64{"status": 0.655}, // measured 0.675 (27 of 40) less 0.02
		koEnGap:   0.104,                               // measured 0.084 (ko 0.907, en 0.823) plus 0.02
	}},
	// Written beside the sixty-sixth, from the last quarter of the cases.
	{"heldout69", "d8f297b0fc5e21cfe28eb8ce2b03567f71b6f90bc00c9de4c4bdd91839b5aa55", 200, floors{
		ndcgOverBaseline: 0.128, // measured 0.148 (nDCG@5 0.837, baseline 0.689) less 0.02
		koEnGap:          0.086, // measured 0.066 (ko 0.920, en 0.854) plus 0.02
	}},
	// Written as the seventieth, once the sixty-sixth to sixty-ninth had judged both
	// tag models together, to judge them again with the gate set for them on the
	// tuning set alone: four more writers, each on a quarter of the next least
	// used cases.
	{"heldout70", "23c44595a9058a37ad886cd86495830757d580b49fae70e5f49c8e6d3ee150ac", 200, floors{
		koEnGap: 0.113, // measured 0.093 (ko 0.947, en 0.854) plus 0.02
	}},
	// Written beside the seventieth, from another quarter of the cases.
	{"heldout71", "ec4d86415f80425a41d7a1492cbf59964ae7fa9a65d4d72a369e40dfb5b1aae6", 200, floors{}},
	// Written beside the seventieth, from another quarter of the cases.
	{"heldout72", "9cc83efaed5529d1ccb026b037478d3ce914e44d451520ccc1f8e6f9a1133d2e", 200, floors{}},
	// Written beside the seventieth, from the last quarter of the cases.
	{"heldout73", "f753d8afd4dcd17543da7fb99738149c15c2e8593de6aadd59c6a2f3bf6d2022", 200, floors{}},
	// Written as the seventy-fourth, once the seventieth to seventy-third had
	// judged both tag models, to judge the logistic model's component tags
	// alone beside naive Bayes: four more writers, each on a quarter of the
	// next least used cases.
	{"heldout74", "2115e37a1d6c58f76b9c3659af607caa50f8e9d8a8f9d342306ba858c688c096", 200, floors{
		koEnGap: 0.120, // measured 0.100 (ko 0.933, en 0.833) plus 0.02
	}},
	// Written beside the seventy-fourth, from another quarter of the cases.
	{"heldout75", "800ea1ec8fa7594ed78b3244304765f96d50450d43671d6795281322e6e7b319", 200, floors{
		koEnGap: 0.105, // measured 0.085 (ko 0.960, en 0.875) plus 0.02
	}},
	// Written beside the seventy-fourth, from another quarter of the cases.
	{"heldout76", "fbdf9bef11e0f767cd3e589c25d5358d461288cfa167deb74cc5aba6b68a6fa8", 200, floors{}},
	// Written beside the seventy-fourth, from the last quarter of the cases.
	{"heldout77", "00a96ac75b850622f41216767c73772295e525c40f317505e34482376921d0f1", 200, floors{
		hit3:      0.793,                               // measured 0.813 less 0.02
		styleHit3: map[string]float64{"status": 0.605}, // measured 0.625 (25 of 40) less 0.02
	}},
	// Written as the seventy-eighth, once the seventy-fourth to seventy-seventh
	// had judged the logistic model's component tags, for a second look at
	// them by a rule written before: four more writers, each on a quarter of
	// the next least used cases.
	{"heldout78", "f9c444c2ce970d0ae36dde1d1d7d0489c242b6bce00c94b1579629b0a3535dcd", 200, floors{
		ndcgOverBaseline: 0.117, // measured 0.137 (nDCG@5 0.796, baseline 0.659) less 0.02
		koEnGap:          0.110, // measured 0.090 (ko 0.933, en 0.844) plus 0.02
	}},
	// Written beside the seventy-eighth, from another quarter of the cases.
	{"heldout79", "db218cc54bd079b2ab749b600444289769abaedc958233c7c3838b3cf7eda894", 200, floors{
		ndcgOverBaseline: 0.126,                               // measured 0.146 (nDCG@5 0.810, baseline 0.664) less 0.02
		hit3:             0.810,                               // measured 0.830 less 0.02
		styleHit3:        map[string]float64{"status": 0.655}, // measured 0.675 (27 of 40) less 0.02
		answered:         0.869,                               // measured 0.889 less 0.02
		koEnGap:          0.108,                               // measured 0.088 (ko 0.880, en 0.792) plus 0.02
	}},
	// Written beside the seventy-eighth, from another quarter of the cases.
	{"heldout80", "c3b5edbfd47b7a29b1c4aa3b3feab70c93a0a989079993e9093aa6ed5bcd9ba0", 200, floors{
		ndcgOverBaseline: 0.105, // measured 0.125 (nDCG@5 0.843, baseline 0.718) less 0.02
	}},
	// Written beside the seventy-eighth, from the last quarter of the cases.
	{"heldout81", "21f684dcafa8d90cc6bdeb5750e684306b6b508d4026d66f6d68913e0e8befce", 200, floors{
		ndcgOverBaseline: 0.130, // measured 0.1495 (nDCG@5 0.811, baseline 0.661) less 0.02
	}},
	// Written as the eighty-second, once the seventy-eighth to eighty-first
	// had shown the gate leaving real trouble unanswered, to judge a lower
	// gate chosen on the tuning set: four more writers, each on a quarter of
	// the next least used cases.
	{"heldout82", "7c10e6329056d70504b99cf0573b610339005e4a01b080b61398cf74fef118fb", 200, floors{}},
	// Written beside the eighty-second, from another quarter of the cases.
	{"heldout83", "2b16e9509d6e669ab94c41a08f8547ab080a876f2bc383b8ccfaa06a9e86313a", 200, floors{
		koEnGap: 0.078, // measured 0.058 (ko 0.933, en 0.875) plus 0.02
	}},
	// Written beside the eighty-second, from another quarter of the cases.
	{"heldout84", "315b3298ec9242aeebaa5e7b8acc03f04f5da76a27ba50820e74c3bfb6dfc9ba", 200, floors{
		ndcgOverBaseline: 0.128,                               // measured 0.148 (nDCG@5 0.816, baseline 0.669) less 0.02
		styleHit3:        map[string]float64{"status": 0.655}, // measured 0.675 (27 of 40) less 0.02
	}},
	// Written beside the eighty-second, from the last quarter of the cases.
	{"heldout85", "17449829c5f6de317ef702fb0a2e84942e8f72dc666bb5f21517d17360bc8580", 200, floors{}},
	// Written as the eighty-sixth, to judge more built-in messages for the
	// trouble model by a rule set down before any run: four more writers,
	// each on a quarter of the next least used cases.
	{"heldout86", "ae7115f34104054905e12e74be0812ba79e9304d783feff288143bb015449177", 200, floors{
		koEnGap: 0.071, // measured 0.051 (ko 0.947, en 0.896) plus 0.02
	}},
	// Written beside the eighty-sixth, from another quarter of the cases.
	{"heldout87", "09bd8ad746291054ac5761de252b65bbaf74b869cb44d4f15fe6f5ed812cbde5", 200, floors{
		ndcgOverBaseline: 0.096, // measured 0.116 (nDCG@5 0.799, baseline 0.683) less 0.02
	}},
	// Written beside the eighty-sixth, from another quarter of the cases.
	{"heldout88", "a4e0f6625217dd11f860c2afa6ec523770193179cef82374b60188c1ca8e4cf9", 200, floors{
		ndcgOverBaseline: 0.119, // measured 0.139 (nDCG@5 0.820, baseline 0.681) less 0.02
	}},
	// Written beside the eighty-sixth, from the last quarter of the cases.
	{"heldout89", "1a705e0e00d57e2b370bbf2130e9a1c269f3362770cf6b29e8c9604d51b3b27e", 200, floors{
		ndcgOverBaseline: 0.128, // measured 0.148 (nDCG@5 0.825, baseline 0.678) less 0.02
	}},
	// Written as the ninetieth, to judge the built-in messages the
	// eighty-sixth to eighty-ninth did not keep, a second time and by the
	// same rule, once the floors gave what reseeding moves: four more
	// writers, each on a quarter of the next least used cases.
	{"heldout90", "b6e8ba787bddd374d5bfdee97c93ed0b24c79fef0d2afa9fe9a784bdc1838993", 200, floors{
		ndcgOverBaseline: 0.096, // measured 0.116 (nDCG@5 0.821, baseline 0.705) less 0.02
	}},
	// Written beside the ninetieth, from another quarter of the cases.
	{"heldout91", "02a51a7d8d862141f979913bbb21e5992e1ed57c9792a2d3036b92d58dd1fcf6", 200, floors{
		ndcgOverBaseline: 0.112, // measured 0.132 (nDCG@5 0.834, baseline 0.703) less 0.02
		koEnGap:          0.081, // measured 0.061 (ko 0.947, en 0.885) plus 0.02
	}},
	// Written beside the ninetieth, from another quarter of the cases.
	{"heldout92", "06d214fba1e612954bddf2e6bde0b46f8fc0ac42c2ffe68d6c920e78979404b0", 200, floors{}},
	// Written beside the ninetieth, from the last quarter of the cases.
	{"heldout93", "b520f73990321abb035eb710892993cf2e39f7de2bcc91edb555290301f8f533", 200, floors{}},
	// Written as the ninety-fourth, to judge the lower answer gate the
	// eighty-second to eighty-fifth did not keep, a second time and by the
	// same rule, now that the floors give what reseeding moves: four more
	// writers, each on a quarter of the next least used cases.
	{"heldout94", "3177e55f10ed95117ecbace623deb4fd1fee6763ae4baba2db849807dfcc535c", 200, floors{
		ndcgOverBaseline: 0.092, // measured 0.112 (nDCG@5 0.797, baseline 0.685) less 0.02
	}},
	// Written beside the ninety-fourth, from another quarter of the cases.
	{"heldout95", "af50f440f32377a90dae66750a6dde5ed0f36fb784e6417cf705c584c5c5b75c", 200, floors{
		ndcgOverBaseline: 0.086, // measured 0.106 (nDCG@5 0.813, baseline 0.707) less 0.02
	}},
	// Written beside the ninety-fourth, from another quarter of the cases.
	{"heldout96", "6f0d470a885feb71e0d41b875eb2f1c14c8267123b2fd36b70f03431f4fa43fd", 200, floors{
		ndcgOverBaseline: 0.079, // measured 0.099 (nDCG@5 0.804, baseline 0.705) less 0.02
		koEnGap:          0.095, // measured 0.075 (ko 0.960, en 0.885) plus 0.02
	}},
	// Written beside the ninety-fourth, from the last quarter of the cases.
	{"heldout97", "a5b45f61ae5139edfb3b239c2f187cfc3f4ab74a01ffa1ab72b640f059da04fc", 200, floors{
		ndcgOverBaseline: 0.045, // measured 0.065 (nDCG@5 0.745, baseline 0.680) less 0.02
		hit3:             0.793, // measured 0.813 less 0.02
		koEnGap:          0.116, // measured 0.096 (ko 0.867, en 0.771) plus 0.02
	}},
	// Written as the ninety-eighth, once the ninety-fourth to ninety-seventh
	// had judged the lower answer gate: a blind measure of the matcher with
	// it, no change judged. Four more writers, each on a quarter of the next
	// least used cases.
	{"heldout98", "5687ee83597b9b3bd6209dcd38b5438339e40d1324ff0e87a8074ca415a0f23e", 200, floors{
		ndcgOverBaseline: 0.071, // measured 0.091 (nDCG@5 0.812, baseline 0.721) less 0.02
		silence:          0.927, // measured 0.947 less 0.02
		koEnGap:          0.078, // measured 0.058 (ko 0.933, en 0.875) plus 0.02
	}},
	// Written beside the ninety-eighth, from another quarter of the cases.
	{"heldout99", "294a9ec5057d0b3636ec9e3ecae1fcf49f3e9d62d07e89423719d7f2d1893d02", 200, floors{
		ndcgOverBaseline: 0.114, // measured 0.134 (nDCG@5 0.837, baseline 0.703) less 0.02
	}},
	// Written beside the ninety-eighth, from another quarter of the cases.
	{"heldout100", "4b2a7a7c0b4e23a35dbe95d304b1ab0170e6335682d028d8d464d162affd02ab", 200, floors{
		ndcgOverBaseline: 0.090, // measured 0.110 (nDCG@5 0.804, baseline 0.694) less 0.02
	}},
	// Written beside the ninety-eighth, from the last quarter of the cases.
	{"heldout101", "7870317d502cd80a0a13d520937a7fdf7104c64a346c86d96256e1f97add76ca", 200, floors{
		ndcgOverBaseline: 0.074, // measured 0.094 (nDCG@5 0.783, baseline 0.689) less 0.02
		silence:          0.875, // measured 0.895 less 0.02
		koEnGap:          0.102, // measured 0.082 (ko 0.947, en 0.865) plus 0.02
	}},
	// Written as the hundred-and-second, to judge an answer gate that also
	// answers a text naming a known incident (the named model sure of its
	// best text hit). Four more writers, each on a quarter of the next least
	// used cases.
	{"heldout102", "792ab52aa197166cc204acaff1327bbf4ac8a3b1a4e6b026d320db33018c27a3", 200, floors{
		ndcgOverBaseline: 0.118, // measured 0.138 (nDCG@5 0.798, baseline 0.660) less 0.02
		silence:          0.927, // measured 0.947 less 0.02
	}},
	// Written beside the hundred-and-second, from another quarter of the cases.
	{"heldout103", "b68642c76690d18f202bda3a902c4afef0a2c8ff6a1109d79e43ad70296ac751", 200, floors{
		ndcgOverBaseline: 0.067, // measured 0.087 (nDCG@5 0.797, baseline 0.710) less 0.02
	}},
	// Written beside the hundred-and-second, from another quarter of the cases.
	{"heldout104", "5b5c60a79b279b219b2d55d3b157a1801bf906a2c5afcc6be4de946e96a1d745", 200, floors{
		ndcgOverBaseline: 0.054, // measured 0.074 (nDCG@5 0.809, baseline 0.735) less 0.02
	}},
	// Written beside the hundred-and-second, from the last quarter of the cases.
	{"heldout105", "27c26d8f6e99ce76484f4e8017364783529cc37778502cfedbd6e1428bd64482", 200, floors{
		ndcgOverBaseline: 0.032, // measured 0.052 (nDCG@5 0.767, baseline 0.715) less 0.02
		koEnGap:          0.117, // measured 0.097 (ko 0.920, en 0.823) plus 0.02
	}},
	// Written as the hundred-and-sixth, once the hundred-and-second to
	// hundred-and-fifth had judged the named-incident gate (not kept): a
	// blind measure of the matcher as it is, with its own cases in the
	// library and left out (go run ./matcher/cmd/eval -unseen), no change
	// judged. Four more writers, each on a quarter of the next least used
	// cases.
	{"heldout106", "ffe15651f76c40ce63208080a019ea61bad42ab03dbcddbb2159c19131b9b4a5", 200, floors{
		ndcgOverBaseline: 0.111, // measured 0.131 (nDCG@5 0.842, baseline 0.711) less 0.02
	}},
	// Written beside the hundred-and-sixth, from another quarter of the cases.
	{"heldout107", "e2851435b485ae37f51e62730953c723b2c56eb2d19d3048c35d12dcf7a65892", 200, floors{
		ndcgOverBaseline: 0.090, // measured 0.110 (nDCG@5 0.794, baseline 0.684) less 0.02
		silence:          0.927, // measured 0.947 less 0.02
	}},
	// Written beside the hundred-and-sixth, from another quarter of the cases.
	{"heldout108", "bc97a0eba9ed7e5f95c7d9ecf0b1061df930692027dae5c48678ea66d21d3e25", 200, floors{
		ndcgOverBaseline: 0.065, // measured 0.085 (nDCG@5 0.799, baseline 0.714) less 0.02
		koEnGap:          0.105, // measured 0.085 (ko 0.960, en 0.875) plus 0.02
	}},
	// Written beside the hundred-and-sixth, from the last quarter of the cases.
	{"heldout109", "0d7753abe03258e373597e60459dd599f7b034bea029cd774236d3f5f379095b", 200, floors{
		ndcgOverBaseline: 0.054, // measured 0.074 (nDCG@5 0.789, baseline 0.715) less 0.02
	}},
	// Written as the hundred-and-tenth, to judge the ranking's use of the
	// tags the learned model is less sure of (below an even chance) as
	// weaker evidence. Four more writers, each on a quarter of the next
	// least used cases.
	{"heldout110", "1aaa7a1cd2993797a147a8c62e405fb0868951cacdd6bfa4b0c25e587beb379b", 200, floors{
		ndcgOverBaseline: 0.103, // measured 0.123 (nDCG@5 0.844, baseline 0.721) less 0.02
	}},
	// Written beside the hundred-and-tenth, from another quarter of the cases.
	{"heldout111", "8ae4fc44ed61534ba017960e89402298c51c31d9659a695baec3ef6b560b690d", 200, floors{
		ndcgOverBaseline: 0.070, // measured 0.090 (nDCG@5 0.825, baseline 0.735) less 0.02
		answered:         0.875, // measured 0.895 less 0.02
		silence:          0.901, // measured 0.921 less 0.02
	}},
	// Written beside the hundred-and-tenth, from another quarter of the cases.
	{"heldout112", "c00e9bf72b04d4e25a9e352a49650d557795ae5522bfcb93372f5c1ae71410cf", 200, floors{
		ndcgOverBaseline: 0.112, // measured 0.132 (nDCG@5 0.785, baseline 0.653) less 0.02
		silence:          0.927, // measured 0.947 less 0.02
		koEnGap:          0.080, // measured 0.060 (ko 0.893, en 0.833) plus 0.02
	}},
	// Written beside the hundred-and-tenth, from the last quarter of the cases.
	{"heldout113", "fef0e1327b4bf27e40df2c396e7a85cbc5b6937aea8f429c75aa7f6efdd05a8b", 200, floors{
		ndcgOverBaseline: 0.050, // measured 0.070 (nDCG@5 0.736, baseline 0.666) less 0.02
		hit3:             0.828, // measured 0.848 less 0.02
		silence:          0.927, // measured 0.947 less 0.02
		koEnGap:          0.101, // measured 0.081 (ko 0.893, en 0.812) plus 0.02
	}},
	// Written as the hundred-and-fourteenth, to judge blind what the
	// hundred-and-tenth to hundred-and-thirteenth could not: the ranking's
	// use of the tags the learned model is less sure of. Four more
	// writers, each on a quarter of the next least used cases.
	{"heldout114", "a03ffeb497861d9f75eb268493b04058a937a384ffa390472d347d54ac168965", 200, floors{
		ndcgOverBaseline: 0.066, // measured 0.086 (nDCG@5 0.750, baseline 0.664) less 0.02
		koEnGap:          0.083, // measured 0.063 (ko 0.907, en 0.844) plus 0.02
	}},
	// Written beside the hundred-and-fourteenth, from another quarter of the cases.
	{"heldout115", "f80e0cd2a7483233dbb5153e59a27c29b47fc5c7cbecd85ebfbd84b3f69fabe8", 200, floors{
		ndcgOverBaseline: 0.083, // measured 0.103 (nDCG@5 0.823, baseline 0.720) less 0.02
		silence:          0.927, // measured 0.947 less 0.02
		koEnGap:          0.087, // measured 0.067 (ko 0.973, en 0.906) plus 0.02
	}},
	// Written beside the hundred-and-fourteenth, from another quarter of the cases.
	{"heldout116", "8b7943def3a3c0e36cad5f2f218cc46a11ad66b2172f1c35ff986d17b48c19d7", 200, floors{
		ndcgOverBaseline: 0.090, // measured 0.110 (nDCG@5 0.818, baseline 0.708) less 0.02
	}},
	// Written beside the hundred-and-fourteenth, from the last quarter of the cases.
	{"heldout117", "68d9fe751158a9870ec97c99eec830219d16523826a196cf2ba4d424956fd622", 200, floors{
		ndcgOverBaseline: 0.118, // measured 0.138 (nDCG@5 0.835, baseline 0.697) less 0.02
		koEnGap:          0.091, // measured 0.071 (ko 0.867, en 0.938) plus 0.02
	}},
	// Written as the hundred-and-eighteenth, to measure the matcher as it
	// was (4680d7b) on text nobody had seen: no change was judged on it.
	// Four writers, each on a quarter of the next least used cases.
	{"heldout118", "6c06a7197f9a5ffd2e96cf9eaf59cf2203bea53a88dee99c6757c2b6c0ea1f7d", 200, floors{
		ndcgOverBaseline: 0.105, // measured 0.125 (nDCG@5 0.790, baseline 0.665) less 0.02
	}},
	// Written beside the hundred-and-eighteenth, from the second quarter of the cases.
	{"heldout119", "fe58c44f4144597db39918f8eac79056a23e2fa888aed3aee1fdf2fc13db3804", 200, floors{
		ndcgOverBaseline: 0.109, // measured 0.129 (nDCG@5 0.834, baseline 0.705) less 0.02
		silence:          0.927, // measured 0.947 less 0.02
	}},
	// Written beside the hundred-and-eighteenth, from another quarter of the cases.
	{"heldout120", "0e97758954ad9c139bdd6092fa4834b393baf05bceb6b13f6dac089c9092d3bf", 200, floors{
		ndcgOverBaseline: 0.039, // measured 0.059 (nDCG@5 0.794, baseline 0.735) less 0.02
		koEnGap:          0.113, // measured 0.093 (ko 0.947, en 0.854) plus 0.02
	}},
	// Written beside the hundred-and-eighteenth, from the last quarter of the cases.
	{"heldout121", "123df2cd256e1d49c9759d1b6abfd269268d1377bec4b32f0f9b39f6fdc3a825", 200, floors{
		ndcgOverBaseline: 0.090, // measured 0.110 (nDCG@5 0.833, baseline 0.723) less 0.02
		koEnGap:          0.113, // measured 0.093 (ko 0.947, en 0.854) plus 0.02
	}},
	// Written as the hundred-and-twenty-second, to judge blind one fix:
	// a taxonomy phrase matches only within one clause of the text (not
	// kept; the floors are the matcher's without it). Four writers, each
	// on a quarter of the next least used cases.
	{"heldout122", "83a769d319a0693f8364d6d48d2f68a258dbd551a816735f761ddd61dad85858", 200, floors{
		ndcgOverBaseline: 0.101, // measured 0.121 (nDCG@5 0.821, baseline 0.700) less 0.02
		silence:          0.927, // measured 0.947 less 0.02
	}},
	// Written beside the hundred-and-twenty-second, from the second quarter of the cases.
	{"heldout123", "791a18a8a5519117e6366e7c907098147dc0222acb013a1d259831c8ec86caed", 200, floors{
		ndcgOverBaseline: 0.085, // measured 0.105 (nDCG@5 0.831, baseline 0.726) less 0.02
	}},
	// Written beside the hundred-and-twenty-second, from another quarter of the cases.
	{"heldout124", "db17c394dde8e9ef1793c5971528e37992ebee477e359a81eda38bfeb49e3030", 200, floors{
		ndcgOverBaseline: 0.106, // measured 0.126 (nDCG@5 0.810, baseline 0.684) less 0.02
	}},
	// Written beside the hundred-and-twenty-second, from the last quarter of the cases.
	{"heldout125", "0d6af08a27a7c0753a19dfc48df22fef9cbf855722a45a27db9ccfe7759a8a29", 200, floors{
		ndcgOverBaseline: 0.119, // measured 0.139 (nDCG@5 0.817, baseline 0.678) less 0.02
	}},
	// Written as the hundred-and-twenty-sixth, to judge blind one change:
	// 1,097 more built-in messages for the trouble and tag models (not
	// kept; the floors are the matcher's without them). Four writers, each
	// on a quarter of the next least used cases.
	{"heldout126", "5574146335ccb022e5855ebd62301c622e432e32c2a4b12c95ef06c93d887ddb", 200, floors{
		ndcgOverBaseline: 0.104, // measured 0.124 (nDCG@5 0.828, baseline 0.704) less 0.02
		koEnGap:          0.115, // measured 0.095 (ko 0.960, en 0.865) plus 0.02
	}},
	// Written beside the hundred-and-twenty-sixth, from the second quarter of the cases.
	{"heldout127", "4b0455435f2a7ac02477b8a9a697d4e80b6a6f3f01d1c7f890cd41859cd9c6cc", 200, floors{
		ndcgOverBaseline: 0.075, // measured 0.095 (nDCG@5 0.780, baseline 0.685) less 0.02
		hit3:             0.805, // measured 0.825 less 0.02
	}},
	// Written beside the hundred-and-twenty-sixth, from another quarter of the cases.
	{"heldout128", "a562ee12eaaaa817e3a6973a63144e5b272dbf3a050e2ada1768b545c4ac3fa4", 200, floors{
		ndcgOverBaseline: 0.081, // measured 0.101 (nDCG@5 0.811, baseline 0.710) less 0.02
		silence:          0.927, // measured 0.947 less 0.02
		koEnGap:          0.132, // measured 0.112 (ko 0.987, en 0.875) plus 0.02
	}},
	// Written beside the hundred-and-twenty-sixth, from the last quarter of the cases.
	{"heldout129", "c8885211a7f77e516edd1671934b20448835320bd85d8d8ae95bfb31f1618a35", 200, floors{
		ndcgOverBaseline: 0.081, // measured 0.101 (nDCG@5 0.797, baseline 0.696) less 0.02
		koEnGap:          0.073, // measured 0.053 (ko 0.907, en 0.854) plus 0.02
	}},
}

// tuningPath is the set the matcher is tuned on; no held-out set after the
// first shares text with it.
const tuningPath = "../testdata/eval/tuning.jsonl"

// tuningCasesPath is the tuning queries that are each about one built-in
// case; the ranking's weights are fitted on them, so no held-out set shares
// text with them either.
const tuningCasesPath = "../testdata/eval/tuning-cases.jsonl"

// TestHeldoutFrozen fails for each held-out set whose file has changed.
func TestHeldoutFrozen(t *testing.T) {
	for _, set := range heldoutSets {
		t.Run(set.name, func(t *testing.T) { checkFrozen(t, set.path(), set.sha256) })
	}
}

// checkFrozen fails when the file at path does not have the SHA-256 sum.
func checkFrozen(t *testing.T, path, sum string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	got := sha256.Sum256(data)
	if hex.EncodeToString(got[:]) != sum {
		t.Fatalf("%s has SHA-256 %s, pinned %s: the held-out set is frozen; write a new set instead of editing it", path, hex.EncodeToString(got[:]), sum)
	}
}

// TestHeldoutWellFormed checks that each held-out set measures what the
// README says it does: at least its minQueries queries in five kinds, at
// least 50 Korean positive queries, gold tags that are taxonomy ids, gold
// cases that exist in the built-in library, and for every positive query at
// least one built-in case, other than its gold case, that counts as a hit.
// Every set after the first must also share no query text with an earlier
// set or the tuning set, so that it measures text nothing was tuned on. The
// first set came before that rule and shares one chatter text with the
// tuning set, so it is not checked for it.
func TestHeldoutWellFormed(t *testing.T) {
	for i, set := range heldoutSets {
		t.Run(set.name, func(t *testing.T) {
			qs := checkWellFormed(t, set.path(), set.minQueries)
			if i == 0 {
				return
			}
			var earlier []string
			for _, e := range heldoutSets[:i] {
				earlier = append(earlier, e.path())
			}
			checkNoSharedText(t, qs, append(earlier, tuningPath, tuningCasesPath)...)
		})
	}
}

// checkWellFormed checks a held-out set at path: at least minQueries
// queries, at least 25 of each of the five kinds and nothing else, at least
// 50 Korean positive queries and 20 with a gold case, gold tags that are
// taxonomy ids, gold cases that exist in the built-in library, and for every
// positive query at least one built-in case, other than its gold case, that
// counts as a hit. It returns the queries.
func checkWellFormed(t *testing.T, path string, minQueries int) []eval.Query {
	t.Helper()
	qs := loadSet(t, path)
	if len(qs) < minQueries {
		t.Errorf("%d queries, want at least %d", len(qs), minQueries)
	}
	tax := cases.DefaultTaxonomy()
	lib, err := builtinLibrary()
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]int{}
	koPositives, gold := 0, 0
	seen := map[string]bool{}
	for _, q := range qs {
		if seen[q.ID] {
			t.Errorf("query id %s used twice", q.ID)
		}
		seen[q.ID] = true
		kinds[q.Kind]++
		if q.Lang != "en" && q.Lang != "ko" {
			t.Errorf("%s: lang %q, want en or ko", q.ID, q.Lang)
		}
		if q.Chatter() {
			if len(q.Symptoms)+len(q.Components) > 0 || q.Case != "" {
				t.Errorf("%s: chatter with gold tags or case", q.ID)
			}
			continue
		}
		if q.Lang == "ko" {
			koPositives++
		}
		checkGoldTags(t, tax, q)
		if len(q.Symptoms) == 0 || len(q.Components) == 0 {
			t.Errorf("%s: a positive query needs gold symptoms and components", q.ID)
		}
		if q.Case != "" {
			gold++
			if _, ok := lib.Get(q.Case); !ok {
				t.Errorf("%s: gold case %s is not in the built-in library", q.ID, q.Case)
			}
		}
		n := 0
		for _, c := range eval.Relevant(q, lib) {
			if c.ID != q.Case {
				n++
			}
		}
		if n == 0 {
			t.Errorf("%s: no built-in case shares a gold symptom and a gold component", q.ID)
		}
	}
	for _, k := range slices.Concat(queryKinds, []string{"chatter"}) {
		if kinds[k] < 25 {
			t.Errorf("%d %s queries, want at least 25", kinds[k], k)
		}
	}
	if len(kinds) != 5 {
		t.Errorf("kinds %v, want exactly %v and chatter", kinds, queryKinds)
	}
	if koPositives < 50 {
		t.Errorf("%d Korean positive queries, want at least 50", koPositives)
	}
	if gold < 20 {
		t.Errorf("%d queries with a gold case, want at least 20", gold)
	}
	return qs
}

// checkGoldTags fails for each gold symptom or component of q that is not
// a taxonomy id.
func checkGoldTags(t *testing.T, tax *cases.Taxonomy, q eval.Query) {
	t.Helper()
	for _, id := range q.Symptoms {
		if _, ok := tax.Lookup(cases.KindSymptom, id); !ok {
			t.Errorf("%s: symptom %q is not a taxonomy id", q.ID, id)
		}
	}
	for _, id := range q.Components {
		if _, ok := tax.Lookup(cases.KindComponent, id); !ok {
			t.Errorf("%s: component %q is not a taxonomy id", q.ID, id)
		}
	}
}

// builtinLibrary is the built-in library, loaded once: the checks of
// every set read it, and loading it under the race detector for each of
// more than a hundred sets cost minutes.
var builtinLibrary = sync.OnceValues(func() (*cases.Library, error) {
	set, err := cases.Builtin(cases.DefaultTaxonomy())
	if err != nil {
		return nil, err
	}
	lib, _ := cases.NewLibrary(set)
	return lib, nil
})

// loaded holds the evaluation sets read so far, by path. Every set is
// checked against all the sets before it; reading each file again for each
// later set made that check grow with the square of the sets' number.
var loaded = struct {
	sync.Mutex
	sets map[string][]eval.Query
}{sets: map[string][]eval.Query{}}

// loadSet returns the queries of the set at path, read once.
func loadSet(t *testing.T, path string) []eval.Query {
	t.Helper()
	loaded.Lock()
	defer loaded.Unlock()
	if qs, ok := loaded.sets[path]; ok {
		return qs
	}
	qs, err := eval.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	loaded.sets[path] = qs
	return qs
}

// checkNoSharedText fails for every query in qs whose text, ignoring case
// and spacing, is also the text of a query in one of the sets at paths.
func checkNoSharedText(t *testing.T, qs []eval.Query, paths ...string) {
	t.Helper()
	norm := func(s string) string {
		return strings.Join(strings.Fields(strings.ToLower(s)), " ")
	}
	other := map[string]string{}
	for _, path := range paths {
		for _, q := range loadSet(t, path) {
			other[norm(q.Text)] = path
		}
	}
	for _, q := range qs {
		if path, ok := other[norm(q.Text)]; ok {
			t.Errorf("%s: the same text is in %s", q.ID, path)
		}
	}
}

// TestHeldoutSetsListed checks that the pinned sets are the ones the eval
// command reports (eval.HeldoutSets), in the same order: a set pinned here
// and unknown to -set, or the other way round, would go unreported or
// unchecked.
func TestHeldoutSetsListed(t *testing.T) {
	var names []string
	for _, h := range heldoutSets {
		names = append(names, h.name)
	}
	if !slices.Equal(names, eval.HeldoutSets) {
		t.Errorf("pinned sets %v, eval.HeldoutSets %v", names, eval.HeldoutSets)
	}
}

// TestMessagesAreNotQueries checks that the built-in messages the trouble
// model learns from (matcher/trouble_*.jsonl) share no text with any
// evaluation set: a held-out query among them would measure what the
// model has seen.
func TestMessagesAreNotQueries(t *testing.T) {
	var qs []eval.Query
	for _, path := range []string{"../trouble_en.jsonl", "../trouble_ko.jsonl"} {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
			var m struct{ Text string }
			if err := json.Unmarshal([]byte(line), &m); err != nil {
				t.Fatalf("%s:%d: %v", path, i+1, err)
			}
			qs = append(qs, eval.Query{ID: fmt.Sprintf("%s:%d", path, i+1), Text: m.Text})
		}
	}
	if len(qs) < 1000 {
		t.Fatalf("%d messages, want at least 1000", len(qs))
	}
	var paths []string
	for _, set := range heldoutSets {
		paths = append(paths, set.path())
	}
	checkNoSharedText(t, qs, append(paths, tuningPath, tuningCasesPath)...)
}

// TestTuningCasesWellFormed checks the case queries the ranking is fitted
// on: at least 200, each a positive query about a built-in case with gold
// tags that are taxonomy ids, in both languages, sharing no text with the
// tuning set.
func TestTuningCasesWellFormed(t *testing.T) {
	qs, err := eval.Load(tuningCasesPath)
	if err != nil {
		t.Fatal(err)
	}
	if len(qs) < 200 {
		t.Errorf("%d queries, want at least 200", len(qs))
	}
	tax := cases.DefaultTaxonomy()
	lib, err := builtinLibrary()
	if err != nil {
		t.Fatal(err)
	}
	langs := map[string]int{}
	for _, q := range qs {
		langs[q.Lang]++
		if q.Chatter() || q.Case == "" {
			t.Errorf("%s: want a positive query about a built-in case", q.ID)
			continue
		}
		if _, ok := lib.Get(q.Case); !ok {
			t.Errorf("%s: case %s is not in the built-in library", q.ID, q.Case)
		}
		checkGoldTags(t, tax, q)
	}
	if langs["en"] < 100 || langs["ko"] < 100 {
		t.Errorf("languages %v, want at least 100 English and 100 Korean", langs)
	}
	checkNoSharedText(t, qs, tuningPath)
}
