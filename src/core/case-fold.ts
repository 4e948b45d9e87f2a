/**
 * Case-insensitive comparison of text beyond ASCII, the same in the Worker and in D1.
 *
 * SQLite's lower() (D1 has no ICU) lower-cases ASCII letters only, so `Émile` and `émile` would
 * differ. The fold here maps each code point by its simple one-to-one Unicode lower case, for the
 * letters of the blocks listed below (Latin, Greek, Cyrillic, Armenian), and ASCII as lower() does.
 * It maps code point by code point, without context or expansion: `ß` stays `ß` (no `ss`), `İ`
 * stays `İ` (its lower case is two code points), a final `Σ` folds to `σ`, never `ς`.
 *
 * D1 runs no user functions, and triggers cannot use WITH, so in SQL the fold is a chain of
 * replace() calls written out in full (`foldFrom`): the unique keys of text and email values are
 * computed by it in the triggers of the migrations, whose text must hold exactly what `foldFrom`
 * generates. Changing the table below therefore needs a new migration that writes the new chain
 * and recomputes the keys. A query's `contains` folds by the letters it needs (`pairsInto`).
 */

// Each pair is an upper-case letter followed by its lower case (String.prototype.toLowerCase of
// that one code point, when it is a single code point other than itself).
const TABLE = [
  // Latin-1 Supplement (U+00C0–U+00FF)
  'ÀàÁáÂâÃãÄäÅåÆæÇçÈèÉéÊêËëÌìÍíÎîÏïÐðÑñÒòÓóÔôÕõÖöØøÙùÚúÛûÜüÝýÞþ',
  // Latin Extended-A (U+0100–U+017F)
  'ĀāĂăĄąĆćĈĉĊċČčĎďĐđĒēĔĕĖėĘęĚěĜĝĞğĠġĢģĤĥĦħĨĩĪīĬĭĮįĲĳĴĵĶķĹĺĻļĽľĿŀŁłŃńŅņŇňŊŋŌōŎŏŐőŒœ',
  'ŔŕŖŗŘřŚśŜŝŞşŠšŢţŤťŦŧŨũŪūŬŭŮůŰűŲųŴŵŶŷŸÿŹźŻżŽž',
  // Latin Extended-B (U+0180–U+024F)
  'ƁɓƂƃƄƅƆɔƇƈƉɖƊɗƋƌƎǝƏəƐɛƑƒƓɠƔɣƖɩƗɨƘƙƜɯƝɲƟɵƠơƢƣƤƥƦʀƧƨƩʃƬƭƮʈƯưƱʊƲʋƳƴƵƶƷʒƸƹƼƽǄǆǅǆǇǉǈǉ',
  'ǊǌǋǌǍǎǏǐǑǒǓǔǕǖǗǘǙǚǛǜǞǟǠǡǢǣǤǥǦǧǨǩǪǫǬǭǮǯǱǳǲǳǴǵǶƕǷƿǸǹǺǻǼǽǾǿȀȁȂȃȄȅȆȇȈȉȊȋȌȍȎȏȐȑȒȓȔȕȖȗ',
  'ȘșȚțȜȝȞȟȠƞȢȣȤȥȦȧȨȩȪȫȬȭȮȯȰȱȲȳȺⱥȻȼȽƚȾⱦɁɂɃƀɄʉɅʌɆɇɈɉɊɋɌɍɎɏ',
  // Greek and Coptic (U+0370–U+03FF)
  'ͰͱͲͳͶͷͿϳΆάΈέΉήΊίΌόΎύΏώΑαΒβΓγΔδΕεΖζΗηΘθΙιΚκΛλΜμΝνΞξΟοΠπΡρΣσΤτΥυΦφΧχΨψΩωΪϊΫϋϏϗϘϙϚϛ',
  'ϜϝϞϟϠϡϢϣϤϥϦϧϨϩϪϫϬϭϮϯϴθϷϸϹϲϺϻϽͻϾͼϿͽ',
  // Cyrillic (U+0400–U+04FF)
  'ЀѐЁёЂђЃѓЄєЅѕІіЇїЈјЉљЊњЋћЌќЍѝЎўЏџАаБбВвГгДдЕеЖжЗзИиЙйКкЛлМмНнОоПпРрСсТтУуФфХхЦцЧч',
  'ШшЩщЪъЫыЬьЭэЮюЯяѠѡѢѣѤѥѦѧѨѩѪѫѬѭѮѯѰѱѲѳѴѵѶѷѸѹѺѻѼѽѾѿҀҁҊҋҌҍҎҏҐґҒғҔҕҖҗҘҙҚқҜҝҞҟҠҡҢңҤҥҦҧ',
  'ҨҩҪҫҬҭҮүҰұҲҳҴҵҶҷҸҹҺһҼҽҾҿӀӏӁӂӃӄӅӆӇӈӉӊӋӌӍӎӐӑӒӓӔӕӖӗӘәӚӛӜӝӞӟӠӡӢӣӤӥӦӧӨөӪӫӬӭӮӯӰӱӲӳӴӵӶӷ',
  'ӸӹӺӻӼӽӾӿ',
  // Cyrillic Supplement (U+0500–U+052F)
  'ԀԁԂԃԄԅԆԇԈԉԊԋԌԍԎԏԐԑԒԓԔԕԖԗԘԙԚԛԜԝԞԟԠԡԢԣԤԥԦԧԨԩԪԫԬԭԮԯ',
  // Armenian (U+0530–U+058F)
  'ԱաԲբԳգԴդԵեԶզԷէԸըԹթԺժԻիԼլԽխԾծԿկՀհՁձՂղՃճՄմՅյՆնՇշՈոՉչՊպՋջՌռՍսՎվՏտՐրՑցՒւՓփՔքՕօՖֆ',
  // Latin Extended Additional (U+1E00–U+1EFF)
  'ḀḁḂḃḄḅḆḇḈḉḊḋḌḍḎḏḐḑḒḓḔḕḖḗḘḙḚḛḜḝḞḟḠḡḢḣḤḥḦḧḨḩḪḫḬḭḮḯḰḱḲḳḴḵḶḷḸḹḺḻḼḽḾḿṀṁṂṃṄṅṆṇṈṉṊṋṌṍṎṏ',
  'ṐṑṒṓṔṕṖṗṘṙṚṛṜṝṞṟṠṡṢṣṤṥṦṧṨṩṪṫṬṭṮṯṰṱṲṳṴṵṶṷṸṹṺṻṼṽṾṿẀẁẂẃẄẅẆẇẈẉẊẋẌẍẎẏẐẑẒẓẔẕẞßẠạẢảẤấẦầ',
  'ẨẩẪẫẬậẮắẰằẲẳẴẵẶặẸẹẺẻẼẽẾếỀềỂểỄễỆệỈỉỊịỌọỎỏỐốỒồỔổỖỗỘộỚớỜờỞởỠỡỢợỤụỦủỨứỪừỬửỮữỰựỲỳỴỵỶỷ',
  'ỸỹỺỻỼỽỾỿ',
].join('');

/** The (upper, lower) pairs the fold maps, in the order of the table. */
export const CASE_PAIRS: readonly (readonly [string, string])[] = (() => {
  const chars = [...TABLE];
  return Array.from({ length: chars.length / 2 }, (_, i) => [chars[2 * i] as string, chars[2 * i + 1] as string]);
})();

const LOWER = new Map(CASE_PAIRS);
const ASCII = /^[\0-\x7f]*$/;

/** `text` folded: ASCII `A`–`Z` and each upper-case letter of the table to its lower case. */
export function foldCase(text: string): string {
  if (ASCII.test(text)) return text.replace(/[A-Z]/g, (c) => c.toLowerCase());
  let folded = '';
  for (const c of text) folded += c >= 'A' && c <= 'Z' ? c.toLowerCase() : (LOWER.get(c) ?? c);
  return folded;
}

/** replace() calls one layer of `foldFrom` nests: D1 refuses an expression deeper than 100. */
export const FOLD_LAYER = 60;

/** Splits `tokens` into lines of at most 100 columns, so a migration can hold the text as it is. */
function lines(tokens: readonly string[]): string {
  const out: string[] = [];
  let line = '';
  for (const token of tokens) {
    if (line !== '' && [...line].length + [...token].length > 100) {
      out.push(line);
      line = '';
    }
    line += token;
  }
  return [...out, line].join('\n');
}

/** `expr` through the replace() calls of `pairs`, nested. */
const chain = (expr: string, pairs: readonly (readonly [string, string])[]): string[] => [
  ...pairs.map(() => 'replace('),
  expr,
  ...pairs.map(([upper, lower]) => `,'${upper}','${lower}')`),
];

/**
 * The text of a subquery that adds to the rows of `source` (a subquery) a column `folded`: their
 * column `column` folded as `foldCase` folds it. D1 allows an expression 100 levels deep, so the
 * replace() calls are spread over layers of subqueries of FOLD_LAYER each, one feeding the next
 * (`fold_c1` … `fold_c<n>`); the last adds lower(), for ASCII. A code point is replaced as a whole:
 * UTF-8 is self-synchronizing, so a byte sequence never matches inside another character.
 */
export function foldFrom(source: string, column: string): string {
  const layers = Math.ceil(CASE_PAIRS.length / FOLD_LAYER);
  const heads: string[] = [];
  for (let i = layers - 1; i >= 0; i--) {
    const pairs = CASE_PAIRS.slice(i * FOLD_LAYER, (i + 1) * FOLD_LAYER);
    const input = `fold_t${i}.${i === 0 ? column : `fold_c${i}`}`;
    const last = i === layers - 1;
    const folded = last ? ['lower(', ...chain(input, pairs), ')'] : chain(input, pairs);
    const from = last ? '' : 'FROM ';
    heads.push(lines([`${from}(SELECT fold_t${i}.*, `, ...folded, ` AS ${last ? 'folded' : `fold_c${i + 1}`}`]));
  }
  const tails = Array.from({ length: layers }, (_, i) => ` fold_t${i})`).join('');
  return `${heads.join('\n')}\nFROM ${source}\n${tails}`;
}

/**
 * The pairs whose lower case occurs in `folded` (a folded text). Whether a folded text occurs in
 * the fold of another depends on these letters only: any other upper-case letter folds to a
 * letter the folded text does not hold, folded or not. So `contains` folds by these alone.
 */
export function pairsInto(folded: string): (readonly [string, string])[] {
  const present = new Set(folded);
  return CASE_PAIRS.filter(([, lower]) => present.has(lower));
}

/** `expr` through the replace() calls of `pairs` (at most FOLD_LAYER), as one SQL expression. */
export const replaceSql = (expr: string, pairs: readonly (readonly [string, string])[]): string =>
  lines(chain(expr, pairs));
