-- Unique text and email values compare by Unicode lower case, not by ASCII alone.
--
-- SQLite's lower() (D1 has no ICU) changes ASCII letters only, so `Émile` and `émile`, `ÖL` and
-- `öl`, `Москва` and `МОСКВА` were different unique keys. The unique key of a text or email value
-- is now its fold: each upper-case letter of the Latin, Greek, Cyrillic and Armenian blocks
-- replaced by its simple (one code point) lower case, then lower() for ASCII. The table of letters
-- lives in `src/core/case-fold.ts`, whose `foldFrom` generates the SQL below and whose `foldCase`
-- folds alike in the Worker; a test checks that this file holds exactly that SQL. Foldings into
-- several code points (`ß` to `ss`) and context (a final sigma) are not applied.
--
-- D1 runs no user functions, triggers cannot use WITH, and D1 refuses an expression nested deeper
-- than 100: so the fold is written out in full, as replace() calls spread over layers of
-- subqueries (`fold_t0` … `fold_t9`) that each add the value folded a little further. Only a
-- unique text or email value beyond ASCII (more bytes than characters) goes through them
-- (`fold_in`); any other's fold is lower() alone.

-- 1. The triggers of the record index, as before, with the unique key of text and email folded.
DROP TRIGGER record_index_on_insert;
CREATE TRIGGER record_index_on_insert AFTER INSERT ON records
BEGIN
  INSERT INTO record_index (record_id, field, object_id, value, unique_key)
  SELECT NEW.id, name, NEW.object_id, value, CASE WHEN is_unique AND NOT NEW.deleted
      THEN CASE WHEN type IN ('text', 'email') THEN coalesce(folded, lower(value)) ELSE value END END
  FROM (SELECT fold_t9.*, lower(replace(replace(replace(replace(replace(replace(replace(replace(replace(
replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(
replace(replace(replace(replace(replace(fold_t9.fold_c9,'Ọ','ọ'),'Ỏ','ỏ'),'Ố','ố'),'Ồ','ồ'),'Ổ','ổ')
,'Ỗ','ỗ'),'Ộ','ộ'),'Ớ','ớ'),'Ờ','ờ'),'Ở','ở'),'Ỡ','ỡ'),'Ợ','ợ'),'Ụ','ụ'),'Ủ','ủ'),'Ứ','ứ'),'Ừ','ừ')
,'Ử','ử'),'Ữ','ữ'),'Ự','ự'),'Ỳ','ỳ'),'Ỵ','ỵ'),'Ỷ','ỷ'),'Ỹ','ỹ'),'Ỻ','ỻ'),'Ỽ','ỽ'),'Ỿ','ỿ'))
 AS folded
FROM (SELECT fold_t8.*, replace(replace(replace(replace(replace(replace(replace(replace(replace(
replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(
replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(
replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(
replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(
replace(replace(replace(fold_t8.fold_c8,'Ṍ','ṍ'),'Ṏ','ṏ'),'Ṑ','ṑ'),'Ṓ','ṓ'),'Ṕ','ṕ'),'Ṗ','ṗ')
,'Ṙ','ṙ'),'Ṛ','ṛ'),'Ṝ','ṝ'),'Ṟ','ṟ'),'Ṡ','ṡ'),'Ṣ','ṣ'),'Ṥ','ṥ'),'Ṧ','ṧ'),'Ṩ','ṩ'),'Ṫ','ṫ'),'Ṭ','ṭ')
,'Ṯ','ṯ'),'Ṱ','ṱ'),'Ṳ','ṳ'),'Ṵ','ṵ'),'Ṷ','ṷ'),'Ṹ','ṹ'),'Ṻ','ṻ'),'Ṽ','ṽ'),'Ṿ','ṿ'),'Ẁ','ẁ'),'Ẃ','ẃ')
,'Ẅ','ẅ'),'Ẇ','ẇ'),'Ẉ','ẉ'),'Ẋ','ẋ'),'Ẍ','ẍ'),'Ẏ','ẏ'),'Ẑ','ẑ'),'Ẓ','ẓ'),'Ẕ','ẕ'),'ẞ','ß'),'Ạ','ạ')
,'Ả','ả'),'Ấ','ấ'),'Ầ','ầ'),'Ẩ','ẩ'),'Ẫ','ẫ'),'Ậ','ậ'),'Ắ','ắ'),'Ằ','ằ'),'Ẳ','ẳ'),'Ẵ','ẵ'),'Ặ','ặ')
,'Ẹ','ẹ'),'Ẻ','ẻ'),'Ẽ','ẽ'),'Ế','ế'),'Ề','ề'),'Ể','ể'),'Ễ','ễ'),'Ệ','ệ'),'Ỉ','ỉ'),'Ị','ị')
 AS fold_c9
FROM (SELECT fold_t7.*, replace(replace(replace(replace(replace(replace(replace(replace(replace(
replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(
replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(
replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(
replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(
replace(replace(replace(fold_t7.fold_c7,'Ձ','ձ'),'Ղ','ղ'),'Ճ','ճ'),'Մ','մ'),'Յ','յ'),'Ն','ն')
,'Շ','շ'),'Ո','ո'),'Չ','չ'),'Պ','պ'),'Ջ','ջ'),'Ռ','ռ'),'Ս','ս'),'Վ','վ'),'Տ','տ'),'Ր','ր'),'Ց','ց')
,'Ւ','ւ'),'Փ','փ'),'Ք','ք'),'Օ','օ'),'Ֆ','ֆ'),'Ḁ','ḁ'),'Ḃ','ḃ'),'Ḅ','ḅ'),'Ḇ','ḇ'),'Ḉ','ḉ'),'Ḋ','ḋ')
,'Ḍ','ḍ'),'Ḏ','ḏ'),'Ḑ','ḑ'),'Ḓ','ḓ'),'Ḕ','ḕ'),'Ḗ','ḗ'),'Ḙ','ḙ'),'Ḛ','ḛ'),'Ḝ','ḝ'),'Ḟ','ḟ'),'Ḡ','ḡ')
,'Ḣ','ḣ'),'Ḥ','ḥ'),'Ḧ','ḧ'),'Ḩ','ḩ'),'Ḫ','ḫ'),'Ḭ','ḭ'),'Ḯ','ḯ'),'Ḱ','ḱ'),'Ḳ','ḳ'),'Ḵ','ḵ'),'Ḷ','ḷ')
,'Ḹ','ḹ'),'Ḻ','ḻ'),'Ḽ','ḽ'),'Ḿ','ḿ'),'Ṁ','ṁ'),'Ṃ','ṃ'),'Ṅ','ṅ'),'Ṇ','ṇ'),'Ṉ','ṉ'),'Ṋ','ṋ')
 AS fold_c8
FROM (SELECT fold_t6.*, replace(replace(replace(replace(replace(replace(replace(replace(replace(
replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(
replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(
replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(
replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(
replace(replace(replace(fold_t6.fold_c6,'Ә','ә'),'Ӛ','ӛ'),'Ӝ','ӝ'),'Ӟ','ӟ'),'Ӡ','ӡ'),'Ӣ','ӣ')
,'Ӥ','ӥ'),'Ӧ','ӧ'),'Ө','ө'),'Ӫ','ӫ'),'Ӭ','ӭ'),'Ӯ','ӯ'),'Ӱ','ӱ'),'Ӳ','ӳ'),'Ӵ','ӵ'),'Ӷ','ӷ'),'Ӹ','ӹ')
,'Ӻ','ӻ'),'Ӽ','ӽ'),'Ӿ','ӿ'),'Ԁ','ԁ'),'Ԃ','ԃ'),'Ԅ','ԅ'),'Ԇ','ԇ'),'Ԉ','ԉ'),'Ԋ','ԋ'),'Ԍ','ԍ'),'Ԏ','ԏ')
,'Ԑ','ԑ'),'Ԓ','ԓ'),'Ԕ','ԕ'),'Ԗ','ԗ'),'Ԙ','ԙ'),'Ԛ','ԛ'),'Ԝ','ԝ'),'Ԟ','ԟ'),'Ԡ','ԡ'),'Ԣ','ԣ'),'Ԥ','ԥ')
,'Ԧ','ԧ'),'Ԩ','ԩ'),'Ԫ','ԫ'),'Ԭ','ԭ'),'Ԯ','ԯ'),'Ա','ա'),'Բ','բ'),'Գ','գ'),'Դ','դ'),'Ե','ե'),'Զ','զ')
,'Է','է'),'Ը','ը'),'Թ','թ'),'Ժ','ժ'),'Ի','ի'),'Լ','լ'),'Խ','խ'),'Ծ','ծ'),'Կ','կ'),'Հ','հ')
 AS fold_c7
FROM (SELECT fold_t5.*, replace(replace(replace(replace(replace(replace(replace(replace(replace(
replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(
replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(
replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(
replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(
replace(replace(replace(fold_t5.fold_c5,'Ь','ь'),'Э','э'),'Ю','ю'),'Я','я'),'Ѡ','ѡ'),'Ѣ','ѣ')
,'Ѥ','ѥ'),'Ѧ','ѧ'),'Ѩ','ѩ'),'Ѫ','ѫ'),'Ѭ','ѭ'),'Ѯ','ѯ'),'Ѱ','ѱ'),'Ѳ','ѳ'),'Ѵ','ѵ'),'Ѷ','ѷ'),'Ѹ','ѹ')
,'Ѻ','ѻ'),'Ѽ','ѽ'),'Ѿ','ѿ'),'Ҁ','ҁ'),'Ҋ','ҋ'),'Ҍ','ҍ'),'Ҏ','ҏ'),'Ґ','ґ'),'Ғ','ғ'),'Ҕ','ҕ'),'Җ','җ')
,'Ҙ','ҙ'),'Қ','қ'),'Ҝ','ҝ'),'Ҟ','ҟ'),'Ҡ','ҡ'),'Ң','ң'),'Ҥ','ҥ'),'Ҧ','ҧ'),'Ҩ','ҩ'),'Ҫ','ҫ'),'Ҭ','ҭ')
,'Ү','ү'),'Ұ','ұ'),'Ҳ','ҳ'),'Ҵ','ҵ'),'Ҷ','ҷ'),'Ҹ','ҹ'),'Һ','һ'),'Ҽ','ҽ'),'Ҿ','ҿ'),'Ӏ','ӏ'),'Ӂ','ӂ')
,'Ӄ','ӄ'),'Ӆ','ӆ'),'Ӈ','ӈ'),'Ӊ','ӊ'),'Ӌ','ӌ'),'Ӎ','ӎ'),'Ӑ','ӑ'),'Ӓ','ӓ'),'Ӕ','ӕ'),'Ӗ','ӗ')
 AS fold_c6
FROM (SELECT fold_t4.*, replace(replace(replace(replace(replace(replace(replace(replace(replace(
replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(
replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(
replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(
replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(
replace(replace(replace(fold_t4.fold_c4,'Ϟ','ϟ'),'Ϡ','ϡ'),'Ϣ','ϣ'),'Ϥ','ϥ'),'Ϧ','ϧ'),'Ϩ','ϩ')
,'Ϫ','ϫ'),'Ϭ','ϭ'),'Ϯ','ϯ'),'ϴ','θ'),'Ϸ','ϸ'),'Ϲ','ϲ'),'Ϻ','ϻ'),'Ͻ','ͻ'),'Ͼ','ͼ'),'Ͽ','ͽ'),'Ѐ','ѐ')
,'Ё','ё'),'Ђ','ђ'),'Ѓ','ѓ'),'Є','є'),'Ѕ','ѕ'),'І','і'),'Ї','ї'),'Ј','ј'),'Љ','љ'),'Њ','њ'),'Ћ','ћ')
,'Ќ','ќ'),'Ѝ','ѝ'),'Ў','ў'),'Џ','џ'),'А','а'),'Б','б'),'В','в'),'Г','г'),'Д','д'),'Е','е'),'Ж','ж')
,'З','з'),'И','и'),'Й','й'),'К','к'),'Л','л'),'М','м'),'Н','н'),'О','о'),'П','п'),'Р','р'),'С','с')
,'Т','т'),'У','у'),'Ф','ф'),'Х','х'),'Ц','ц'),'Ч','ч'),'Ш','ш'),'Щ','щ'),'Ъ','ъ'),'Ы','ы')
 AS fold_c5
FROM (SELECT fold_t3.*, replace(replace(replace(replace(replace(replace(replace(replace(replace(
replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(
replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(
replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(
replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(
replace(replace(replace(fold_t3.fold_c3,'Ȩ','ȩ'),'Ȫ','ȫ'),'Ȭ','ȭ'),'Ȯ','ȯ'),'Ȱ','ȱ'),'Ȳ','ȳ')
,'Ⱥ','ⱥ'),'Ȼ','ȼ'),'Ƚ','ƚ'),'Ⱦ','ⱦ'),'Ɂ','ɂ'),'Ƀ','ƀ'),'Ʉ','ʉ'),'Ʌ','ʌ'),'Ɇ','ɇ'),'Ɉ','ɉ'),'Ɋ','ɋ')
,'Ɍ','ɍ'),'Ɏ','ɏ'),'Ͱ','ͱ'),'Ͳ','ͳ'),'Ͷ','ͷ'),'Ϳ','ϳ'),'Ά','ά'),'Έ','έ'),'Ή','ή'),'Ί','ί'),'Ό','ό')
,'Ύ','ύ'),'Ώ','ώ'),'Α','α'),'Β','β'),'Γ','γ'),'Δ','δ'),'Ε','ε'),'Ζ','ζ'),'Η','η'),'Θ','θ'),'Ι','ι')
,'Κ','κ'),'Λ','λ'),'Μ','μ'),'Ν','ν'),'Ξ','ξ'),'Ο','ο'),'Π','π'),'Ρ','ρ'),'Σ','σ'),'Τ','τ'),'Υ','υ')
,'Φ','φ'),'Χ','χ'),'Ψ','ψ'),'Ω','ω'),'Ϊ','ϊ'),'Ϋ','ϋ'),'Ϗ','ϗ'),'Ϙ','ϙ'),'Ϛ','ϛ'),'Ϝ','ϝ')
 AS fold_c4
FROM (SELECT fold_t2.*, replace(replace(replace(replace(replace(replace(replace(replace(replace(
replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(
replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(
replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(
replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(
replace(replace(replace(fold_t2.fold_c2,'Ư','ư'),'Ʊ','ʊ'),'Ʋ','ʋ'),'Ƴ','ƴ'),'Ƶ','ƶ'),'Ʒ','ʒ')
,'Ƹ','ƹ'),'Ƽ','ƽ'),'Ǆ','ǆ'),'ǅ','ǆ'),'Ǉ','ǉ'),'ǈ','ǉ'),'Ǌ','ǌ'),'ǋ','ǌ'),'Ǎ','ǎ'),'Ǐ','ǐ'),'Ǒ','ǒ')
,'Ǔ','ǔ'),'Ǖ','ǖ'),'Ǘ','ǘ'),'Ǚ','ǚ'),'Ǜ','ǜ'),'Ǟ','ǟ'),'Ǡ','ǡ'),'Ǣ','ǣ'),'Ǥ','ǥ'),'Ǧ','ǧ'),'Ǩ','ǩ')
,'Ǫ','ǫ'),'Ǭ','ǭ'),'Ǯ','ǯ'),'Ǳ','ǳ'),'ǲ','ǳ'),'Ǵ','ǵ'),'Ƕ','ƕ'),'Ƿ','ƿ'),'Ǹ','ǹ'),'Ǻ','ǻ'),'Ǽ','ǽ')
,'Ǿ','ǿ'),'Ȁ','ȁ'),'Ȃ','ȃ'),'Ȅ','ȅ'),'Ȇ','ȇ'),'Ȉ','ȉ'),'Ȋ','ȋ'),'Ȍ','ȍ'),'Ȏ','ȏ'),'Ȑ','ȑ'),'Ȓ','ȓ')
,'Ȕ','ȕ'),'Ȗ','ȗ'),'Ș','ș'),'Ț','ț'),'Ȝ','ȝ'),'Ȟ','ȟ'),'Ƞ','ƞ'),'Ȣ','ȣ'),'Ȥ','ȥ'),'Ȧ','ȧ')
 AS fold_c3
FROM (SELECT fold_t1.*, replace(replace(replace(replace(replace(replace(replace(replace(replace(
replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(
replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(
replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(
replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(
replace(replace(replace(fold_t1.fold_c1,'Ŀ','ŀ'),'Ł','ł'),'Ń','ń'),'Ņ','ņ'),'Ň','ň'),'Ŋ','ŋ')
,'Ō','ō'),'Ŏ','ŏ'),'Ő','ő'),'Œ','œ'),'Ŕ','ŕ'),'Ŗ','ŗ'),'Ř','ř'),'Ś','ś'),'Ŝ','ŝ'),'Ş','ş'),'Š','š')
,'Ţ','ţ'),'Ť','ť'),'Ŧ','ŧ'),'Ũ','ũ'),'Ū','ū'),'Ŭ','ŭ'),'Ů','ů'),'Ű','ű'),'Ų','ų'),'Ŵ','ŵ'),'Ŷ','ŷ')
,'Ÿ','ÿ'),'Ź','ź'),'Ż','ż'),'Ž','ž'),'Ɓ','ɓ'),'Ƃ','ƃ'),'Ƅ','ƅ'),'Ɔ','ɔ'),'Ƈ','ƈ'),'Ɖ','ɖ'),'Ɗ','ɗ')
,'Ƌ','ƌ'),'Ǝ','ǝ'),'Ə','ə'),'Ɛ','ɛ'),'Ƒ','ƒ'),'Ɠ','ɠ'),'Ɣ','ɣ'),'Ɩ','ɩ'),'Ɨ','ɨ'),'Ƙ','ƙ'),'Ɯ','ɯ')
,'Ɲ','ɲ'),'Ɵ','ɵ'),'Ơ','ơ'),'Ƣ','ƣ'),'Ƥ','ƥ'),'Ʀ','ʀ'),'Ƨ','ƨ'),'Ʃ','ʃ'),'Ƭ','ƭ'),'Ʈ','ʈ')
 AS fold_c2
FROM (SELECT fold_t0.*, replace(replace(replace(replace(replace(replace(replace(replace(replace(
replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(
replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(
replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(
replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(
replace(replace(replace(fold_t0.fold_in,'À','à'),'Á','á'),'Â','â'),'Ã','ã'),'Ä','ä'),'Å','å')
,'Æ','æ'),'Ç','ç'),'È','è'),'É','é'),'Ê','ê'),'Ë','ë'),'Ì','ì'),'Í','í'),'Î','î'),'Ï','ï'),'Ð','ð')
,'Ñ','ñ'),'Ò','ò'),'Ó','ó'),'Ô','ô'),'Õ','õ'),'Ö','ö'),'Ø','ø'),'Ù','ù'),'Ú','ú'),'Û','û'),'Ü','ü')
,'Ý','ý'),'Þ','þ'),'Ā','ā'),'Ă','ă'),'Ą','ą'),'Ć','ć'),'Ĉ','ĉ'),'Ċ','ċ'),'Č','č'),'Ď','ď'),'Đ','đ')
,'Ē','ē'),'Ĕ','ĕ'),'Ė','ė'),'Ę','ę'),'Ě','ě'),'Ĝ','ĝ'),'Ğ','ğ'),'Ġ','ġ'),'Ģ','ģ'),'Ĥ','ĥ'),'Ħ','ħ')
,'Ĩ','ĩ'),'Ī','ī'),'Ĭ','ĭ'),'Į','į'),'Ĳ','ĳ'),'Ĵ','ĵ'),'Ķ','ķ'),'Ĺ','ĺ'),'Ļ','ļ'),'Ľ','ľ')
 AS fold_c1
FROM (SELECT s.*, CASE WHEN s.is_unique AND s.type IN ('text', 'email')
      AND length(CAST(s.value AS BLOB)) > length(s.value) THEN s.value END AS fold_in
    FROM (SELECT f.name, f.type, f.is_unique, CASE f.type WHEN 'datetime' THEN CAST(round(1000 * coalesce(
        unixepoch(upper(e.value ->> '$.value'), 'subsec'),
        unixepoch(upper(substr(e.value ->> '$.value', 1, 17) || '59' || substr(e.value ->> '$.value', 20)),
          'subsec') + 1
      )) AS INTEGER) ELSE e.value ->> '$.value' END AS value
    FROM index_fields f JOIN json_each(NEW.field_values) e ON e.value ->> '$.fieldName' = f.name
    WHERE f.object_id = NEW.object_id) s)
 fold_t0) fold_t1) fold_t2) fold_t3) fold_t4) fold_t5) fold_t6) fold_t7) fold_t8) fold_t9)
  WHERE true;
END;

DROP TRIGGER record_index_on_update;
CREATE TRIGGER record_index_on_update AFTER UPDATE OF field_values, deleted ON records
WHEN NEW.field_values IS NOT OLD.field_values OR NEW.deleted IS NOT OLD.deleted
BEGIN
  DELETE FROM record_index WHERE record_id = NEW.id AND field IN (
    SELECT o.value ->> '$.fieldName' FROM json_each(OLD.field_values) o
    WHERE NOT EXISTS (SELECT 1 FROM json_each(NEW.field_values) n
      WHERE n.value ->> '$.fieldName' = o.value ->> '$.fieldName'));
  INSERT INTO record_index (record_id, field, object_id, value, unique_key)
  SELECT NEW.id, name, NEW.object_id, value, CASE WHEN is_unique AND NOT NEW.deleted
      THEN CASE WHEN type IN ('text', 'email') THEN coalesce(folded, lower(value)) ELSE value END END
  FROM (SELECT fold_t9.*, lower(replace(replace(replace(replace(replace(replace(replace(replace(replace(
replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(
replace(replace(replace(replace(replace(fold_t9.fold_c9,'Ọ','ọ'),'Ỏ','ỏ'),'Ố','ố'),'Ồ','ồ'),'Ổ','ổ')
,'Ỗ','ỗ'),'Ộ','ộ'),'Ớ','ớ'),'Ờ','ờ'),'Ở','ở'),'Ỡ','ỡ'),'Ợ','ợ'),'Ụ','ụ'),'Ủ','ủ'),'Ứ','ứ'),'Ừ','ừ')
,'Ử','ử'),'Ữ','ữ'),'Ự','ự'),'Ỳ','ỳ'),'Ỵ','ỵ'),'Ỷ','ỷ'),'Ỹ','ỹ'),'Ỻ','ỻ'),'Ỽ','ỽ'),'Ỿ','ỿ'))
 AS folded
FROM (SELECT fold_t8.*, replace(replace(replace(replace(replace(replace(replace(replace(replace(
replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(
replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(
replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(
replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(
replace(replace(replace(fold_t8.fold_c8,'Ṍ','ṍ'),'Ṏ','ṏ'),'Ṑ','ṑ'),'Ṓ','ṓ'),'Ṕ','ṕ'),'Ṗ','ṗ')
,'Ṙ','ṙ'),'Ṛ','ṛ'),'Ṝ','ṝ'),'Ṟ','ṟ'),'Ṡ','ṡ'),'Ṣ','ṣ'),'Ṥ','ṥ'),'Ṧ','ṧ'),'Ṩ','ṩ'),'Ṫ','ṫ'),'Ṭ','ṭ')
,'Ṯ','ṯ'),'Ṱ','ṱ'),'Ṳ','ṳ'),'Ṵ','ṵ'),'Ṷ','ṷ'),'Ṹ','ṹ'),'Ṻ','ṻ'),'Ṽ','ṽ'),'Ṿ','ṿ'),'Ẁ','ẁ'),'Ẃ','ẃ')
,'Ẅ','ẅ'),'Ẇ','ẇ'),'Ẉ','ẉ'),'Ẋ','ẋ'),'Ẍ','ẍ'),'Ẏ','ẏ'),'Ẑ','ẑ'),'Ẓ','ẓ'),'Ẕ','ẕ'),'ẞ','ß'),'Ạ','ạ')
,'Ả','ả'),'Ấ','ấ'),'Ầ','ầ'),'Ẩ','ẩ'),'Ẫ','ẫ'),'Ậ','ậ'),'Ắ','ắ'),'Ằ','ằ'),'Ẳ','ẳ'),'Ẵ','ẵ'),'Ặ','ặ')
,'Ẹ','ẹ'),'Ẻ','ẻ'),'Ẽ','ẽ'),'Ế','ế'),'Ề','ề'),'Ể','ể'),'Ễ','ễ'),'Ệ','ệ'),'Ỉ','ỉ'),'Ị','ị')
 AS fold_c9
FROM (SELECT fold_t7.*, replace(replace(replace(replace(replace(replace(replace(replace(replace(
replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(
replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(
replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(
replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(
replace(replace(replace(fold_t7.fold_c7,'Ձ','ձ'),'Ղ','ղ'),'Ճ','ճ'),'Մ','մ'),'Յ','յ'),'Ն','ն')
,'Շ','շ'),'Ո','ո'),'Չ','չ'),'Պ','պ'),'Ջ','ջ'),'Ռ','ռ'),'Ս','ս'),'Վ','վ'),'Տ','տ'),'Ր','ր'),'Ց','ց')
,'Ւ','ւ'),'Փ','փ'),'Ք','ք'),'Օ','օ'),'Ֆ','ֆ'),'Ḁ','ḁ'),'Ḃ','ḃ'),'Ḅ','ḅ'),'Ḇ','ḇ'),'Ḉ','ḉ'),'Ḋ','ḋ')
,'Ḍ','ḍ'),'Ḏ','ḏ'),'Ḑ','ḑ'),'Ḓ','ḓ'),'Ḕ','ḕ'),'Ḗ','ḗ'),'Ḙ','ḙ'),'Ḛ','ḛ'),'Ḝ','ḝ'),'Ḟ','ḟ'),'Ḡ','ḡ')
,'Ḣ','ḣ'),'Ḥ','ḥ'),'Ḧ','ḧ'),'Ḩ','ḩ'),'Ḫ','ḫ'),'Ḭ','ḭ'),'Ḯ','ḯ'),'Ḱ','ḱ'),'Ḳ','ḳ'),'Ḵ','ḵ'),'Ḷ','ḷ')
,'Ḹ','ḹ'),'Ḻ','ḻ'),'Ḽ','ḽ'),'Ḿ','ḿ'),'Ṁ','ṁ'),'Ṃ','ṃ'),'Ṅ','ṅ'),'Ṇ','ṇ'),'Ṉ','ṉ'),'Ṋ','ṋ')
 AS fold_c8
FROM (SELECT fold_t6.*, replace(replace(replace(replace(replace(replace(replace(replace(replace(
replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(
replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(
replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(
replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(
replace(replace(replace(fold_t6.fold_c6,'Ә','ә'),'Ӛ','ӛ'),'Ӝ','ӝ'),'Ӟ','ӟ'),'Ӡ','ӡ'),'Ӣ','ӣ')
,'Ӥ','ӥ'),'Ӧ','ӧ'),'Ө','ө'),'Ӫ','ӫ'),'Ӭ','ӭ'),'Ӯ','ӯ'),'Ӱ','ӱ'),'Ӳ','ӳ'),'Ӵ','ӵ'),'Ӷ','ӷ'),'Ӹ','ӹ')
,'Ӻ','ӻ'),'Ӽ','ӽ'),'Ӿ','ӿ'),'Ԁ','ԁ'),'Ԃ','ԃ'),'Ԅ','ԅ'),'Ԇ','ԇ'),'Ԉ','ԉ'),'Ԋ','ԋ'),'Ԍ','ԍ'),'Ԏ','ԏ')
,'Ԑ','ԑ'),'Ԓ','ԓ'),'Ԕ','ԕ'),'Ԗ','ԗ'),'Ԙ','ԙ'),'Ԛ','ԛ'),'Ԝ','ԝ'),'Ԟ','ԟ'),'Ԡ','ԡ'),'Ԣ','ԣ'),'Ԥ','ԥ')
,'Ԧ','ԧ'),'Ԩ','ԩ'),'Ԫ','ԫ'),'Ԭ','ԭ'),'Ԯ','ԯ'),'Ա','ա'),'Բ','բ'),'Գ','գ'),'Դ','դ'),'Ե','ե'),'Զ','զ')
,'Է','է'),'Ը','ը'),'Թ','թ'),'Ժ','ժ'),'Ի','ի'),'Լ','լ'),'Խ','խ'),'Ծ','ծ'),'Կ','կ'),'Հ','հ')
 AS fold_c7
FROM (SELECT fold_t5.*, replace(replace(replace(replace(replace(replace(replace(replace(replace(
replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(
replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(
replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(
replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(
replace(replace(replace(fold_t5.fold_c5,'Ь','ь'),'Э','э'),'Ю','ю'),'Я','я'),'Ѡ','ѡ'),'Ѣ','ѣ')
,'Ѥ','ѥ'),'Ѧ','ѧ'),'Ѩ','ѩ'),'Ѫ','ѫ'),'Ѭ','ѭ'),'Ѯ','ѯ'),'Ѱ','ѱ'),'Ѳ','ѳ'),'Ѵ','ѵ'),'Ѷ','ѷ'),'Ѹ','ѹ')
,'Ѻ','ѻ'),'Ѽ','ѽ'),'Ѿ','ѿ'),'Ҁ','ҁ'),'Ҋ','ҋ'),'Ҍ','ҍ'),'Ҏ','ҏ'),'Ґ','ґ'),'Ғ','ғ'),'Ҕ','ҕ'),'Җ','җ')
,'Ҙ','ҙ'),'Қ','қ'),'Ҝ','ҝ'),'Ҟ','ҟ'),'Ҡ','ҡ'),'Ң','ң'),'Ҥ','ҥ'),'Ҧ','ҧ'),'Ҩ','ҩ'),'Ҫ','ҫ'),'Ҭ','ҭ')
,'Ү','ү'),'Ұ','ұ'),'Ҳ','ҳ'),'Ҵ','ҵ'),'Ҷ','ҷ'),'Ҹ','ҹ'),'Һ','һ'),'Ҽ','ҽ'),'Ҿ','ҿ'),'Ӏ','ӏ'),'Ӂ','ӂ')
,'Ӄ','ӄ'),'Ӆ','ӆ'),'Ӈ','ӈ'),'Ӊ','ӊ'),'Ӌ','ӌ'),'Ӎ','ӎ'),'Ӑ','ӑ'),'Ӓ','ӓ'),'Ӕ','ӕ'),'Ӗ','ӗ')
 AS fold_c6
FROM (SELECT fold_t4.*, replace(replace(replace(replace(replace(replace(replace(replace(replace(
replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(
replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(
replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(
replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(
replace(replace(replace(fold_t4.fold_c4,'Ϟ','ϟ'),'Ϡ','ϡ'),'Ϣ','ϣ'),'Ϥ','ϥ'),'Ϧ','ϧ'),'Ϩ','ϩ')
,'Ϫ','ϫ'),'Ϭ','ϭ'),'Ϯ','ϯ'),'ϴ','θ'),'Ϸ','ϸ'),'Ϲ','ϲ'),'Ϻ','ϻ'),'Ͻ','ͻ'),'Ͼ','ͼ'),'Ͽ','ͽ'),'Ѐ','ѐ')
,'Ё','ё'),'Ђ','ђ'),'Ѓ','ѓ'),'Є','є'),'Ѕ','ѕ'),'І','і'),'Ї','ї'),'Ј','ј'),'Љ','љ'),'Њ','њ'),'Ћ','ћ')
,'Ќ','ќ'),'Ѝ','ѝ'),'Ў','ў'),'Џ','џ'),'А','а'),'Б','б'),'В','в'),'Г','г'),'Д','д'),'Е','е'),'Ж','ж')
,'З','з'),'И','и'),'Й','й'),'К','к'),'Л','л'),'М','м'),'Н','н'),'О','о'),'П','п'),'Р','р'),'С','с')
,'Т','т'),'У','у'),'Ф','ф'),'Х','х'),'Ц','ц'),'Ч','ч'),'Ш','ш'),'Щ','щ'),'Ъ','ъ'),'Ы','ы')
 AS fold_c5
FROM (SELECT fold_t3.*, replace(replace(replace(replace(replace(replace(replace(replace(replace(
replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(
replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(
replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(
replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(
replace(replace(replace(fold_t3.fold_c3,'Ȩ','ȩ'),'Ȫ','ȫ'),'Ȭ','ȭ'),'Ȯ','ȯ'),'Ȱ','ȱ'),'Ȳ','ȳ')
,'Ⱥ','ⱥ'),'Ȼ','ȼ'),'Ƚ','ƚ'),'Ⱦ','ⱦ'),'Ɂ','ɂ'),'Ƀ','ƀ'),'Ʉ','ʉ'),'Ʌ','ʌ'),'Ɇ','ɇ'),'Ɉ','ɉ'),'Ɋ','ɋ')
,'Ɍ','ɍ'),'Ɏ','ɏ'),'Ͱ','ͱ'),'Ͳ','ͳ'),'Ͷ','ͷ'),'Ϳ','ϳ'),'Ά','ά'),'Έ','έ'),'Ή','ή'),'Ί','ί'),'Ό','ό')
,'Ύ','ύ'),'Ώ','ώ'),'Α','α'),'Β','β'),'Γ','γ'),'Δ','δ'),'Ε','ε'),'Ζ','ζ'),'Η','η'),'Θ','θ'),'Ι','ι')
,'Κ','κ'),'Λ','λ'),'Μ','μ'),'Ν','ν'),'Ξ','ξ'),'Ο','ο'),'Π','π'),'Ρ','ρ'),'Σ','σ'),'Τ','τ'),'Υ','υ')
,'Φ','φ'),'Χ','χ'),'Ψ','ψ'),'Ω','ω'),'Ϊ','ϊ'),'Ϋ','ϋ'),'Ϗ','ϗ'),'Ϙ','ϙ'),'Ϛ','ϛ'),'Ϝ','ϝ')
 AS fold_c4
FROM (SELECT fold_t2.*, replace(replace(replace(replace(replace(replace(replace(replace(replace(
replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(
replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(
replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(
replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(
replace(replace(replace(fold_t2.fold_c2,'Ư','ư'),'Ʊ','ʊ'),'Ʋ','ʋ'),'Ƴ','ƴ'),'Ƶ','ƶ'),'Ʒ','ʒ')
,'Ƹ','ƹ'),'Ƽ','ƽ'),'Ǆ','ǆ'),'ǅ','ǆ'),'Ǉ','ǉ'),'ǈ','ǉ'),'Ǌ','ǌ'),'ǋ','ǌ'),'Ǎ','ǎ'),'Ǐ','ǐ'),'Ǒ','ǒ')
,'Ǔ','ǔ'),'Ǖ','ǖ'),'Ǘ','ǘ'),'Ǚ','ǚ'),'Ǜ','ǜ'),'Ǟ','ǟ'),'Ǡ','ǡ'),'Ǣ','ǣ'),'Ǥ','ǥ'),'Ǧ','ǧ'),'Ǩ','ǩ')
,'Ǫ','ǫ'),'Ǭ','ǭ'),'Ǯ','ǯ'),'Ǳ','ǳ'),'ǲ','ǳ'),'Ǵ','ǵ'),'Ƕ','ƕ'),'Ƿ','ƿ'),'Ǹ','ǹ'),'Ǻ','ǻ'),'Ǽ','ǽ')
,'Ǿ','ǿ'),'Ȁ','ȁ'),'Ȃ','ȃ'),'Ȅ','ȅ'),'Ȇ','ȇ'),'Ȉ','ȉ'),'Ȋ','ȋ'),'Ȍ','ȍ'),'Ȏ','ȏ'),'Ȑ','ȑ'),'Ȓ','ȓ')
,'Ȕ','ȕ'),'Ȗ','ȗ'),'Ș','ș'),'Ț','ț'),'Ȝ','ȝ'),'Ȟ','ȟ'),'Ƞ','ƞ'),'Ȣ','ȣ'),'Ȥ','ȥ'),'Ȧ','ȧ')
 AS fold_c3
FROM (SELECT fold_t1.*, replace(replace(replace(replace(replace(replace(replace(replace(replace(
replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(
replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(
replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(
replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(
replace(replace(replace(fold_t1.fold_c1,'Ŀ','ŀ'),'Ł','ł'),'Ń','ń'),'Ņ','ņ'),'Ň','ň'),'Ŋ','ŋ')
,'Ō','ō'),'Ŏ','ŏ'),'Ő','ő'),'Œ','œ'),'Ŕ','ŕ'),'Ŗ','ŗ'),'Ř','ř'),'Ś','ś'),'Ŝ','ŝ'),'Ş','ş'),'Š','š')
,'Ţ','ţ'),'Ť','ť'),'Ŧ','ŧ'),'Ũ','ũ'),'Ū','ū'),'Ŭ','ŭ'),'Ů','ů'),'Ű','ű'),'Ų','ų'),'Ŵ','ŵ'),'Ŷ','ŷ')
,'Ÿ','ÿ'),'Ź','ź'),'Ż','ż'),'Ž','ž'),'Ɓ','ɓ'),'Ƃ','ƃ'),'Ƅ','ƅ'),'Ɔ','ɔ'),'Ƈ','ƈ'),'Ɖ','ɖ'),'Ɗ','ɗ')
,'Ƌ','ƌ'),'Ǝ','ǝ'),'Ə','ə'),'Ɛ','ɛ'),'Ƒ','ƒ'),'Ɠ','ɠ'),'Ɣ','ɣ'),'Ɩ','ɩ'),'Ɨ','ɨ'),'Ƙ','ƙ'),'Ɯ','ɯ')
,'Ɲ','ɲ'),'Ɵ','ɵ'),'Ơ','ơ'),'Ƣ','ƣ'),'Ƥ','ƥ'),'Ʀ','ʀ'),'Ƨ','ƨ'),'Ʃ','ʃ'),'Ƭ','ƭ'),'Ʈ','ʈ')
 AS fold_c2
FROM (SELECT fold_t0.*, replace(replace(replace(replace(replace(replace(replace(replace(replace(
replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(
replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(
replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(
replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(
replace(replace(replace(fold_t0.fold_in,'À','à'),'Á','á'),'Â','â'),'Ã','ã'),'Ä','ä'),'Å','å')
,'Æ','æ'),'Ç','ç'),'È','è'),'É','é'),'Ê','ê'),'Ë','ë'),'Ì','ì'),'Í','í'),'Î','î'),'Ï','ï'),'Ð','ð')
,'Ñ','ñ'),'Ò','ò'),'Ó','ó'),'Ô','ô'),'Õ','õ'),'Ö','ö'),'Ø','ø'),'Ù','ù'),'Ú','ú'),'Û','û'),'Ü','ü')
,'Ý','ý'),'Þ','þ'),'Ā','ā'),'Ă','ă'),'Ą','ą'),'Ć','ć'),'Ĉ','ĉ'),'Ċ','ċ'),'Č','č'),'Ď','ď'),'Đ','đ')
,'Ē','ē'),'Ĕ','ĕ'),'Ė','ė'),'Ę','ę'),'Ě','ě'),'Ĝ','ĝ'),'Ğ','ğ'),'Ġ','ġ'),'Ģ','ģ'),'Ĥ','ĥ'),'Ħ','ħ')
,'Ĩ','ĩ'),'Ī','ī'),'Ĭ','ĭ'),'Į','į'),'Ĳ','ĳ'),'Ĵ','ĵ'),'Ķ','ķ'),'Ĺ','ĺ'),'Ļ','ļ'),'Ľ','ľ')
 AS fold_c1
FROM (SELECT s.*, CASE WHEN s.is_unique AND s.type IN ('text', 'email')
      AND length(CAST(s.value AS BLOB)) > length(s.value) THEN s.value END AS fold_in
    FROM (SELECT f.name, f.type, f.is_unique, CASE f.type WHEN 'datetime' THEN CAST(round(1000 * coalesce(
        unixepoch(upper(e.value ->> '$.value'), 'subsec'),
        unixepoch(upper(substr(e.value ->> '$.value', 1, 17) || '59' || substr(e.value ->> '$.value', 20)),
          'subsec') + 1
      )) AS INTEGER) ELSE e.value ->> '$.value' END AS value
    FROM index_fields f JOIN json_each(NEW.field_values) e ON e.value ->> '$.fieldName' = f.name
    WHERE f.object_id = NEW.object_id AND (NEW.deleted IS NOT OLD.deleted OR NOT EXISTS (
      SELECT 1 FROM json_each(OLD.field_values) o
      WHERE o.value ->> '$.fieldName' = f.name AND o.value -> '$.value' IS e.value -> '$.value'))) s)
 fold_t0) fold_t1) fold_t2) fold_t3) fold_t4) fold_t5) fold_t6) fold_t7) fold_t8) fold_t9)
  WHERE true
  ON CONFLICT (record_id, field) DO UPDATE SET value = excluded.value, unique_key = excluded.unique_key;
END;

-- 2. The keys already written, folded. Live records whose values were distinct under the old
-- keys may now fold to one key: such a row keeps its old key (OR IGNORE skips it instead of
-- failing the migration), so existing records stay as they are; the next write of that field's
-- value, or a restore after a delete, is checked under the new fold.
UPDATE OR IGNORE record_index SET unique_key = k.folded
FROM (SELECT fold_t9.*, lower(replace(replace(replace(replace(replace(replace(replace(replace(replace(
replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(
replace(replace(replace(replace(replace(fold_t9.fold_c9,'Ọ','ọ'),'Ỏ','ỏ'),'Ố','ố'),'Ồ','ồ'),'Ổ','ổ')
,'Ỗ','ỗ'),'Ộ','ộ'),'Ớ','ớ'),'Ờ','ờ'),'Ở','ở'),'Ỡ','ỡ'),'Ợ','ợ'),'Ụ','ụ'),'Ủ','ủ'),'Ứ','ứ'),'Ừ','ừ')
,'Ử','ử'),'Ữ','ữ'),'Ự','ự'),'Ỳ','ỳ'),'Ỵ','ỵ'),'Ỷ','ỷ'),'Ỹ','ỹ'),'Ỻ','ỻ'),'Ỽ','ỽ'),'Ỿ','ỿ'))
 AS folded
FROM (SELECT fold_t8.*, replace(replace(replace(replace(replace(replace(replace(replace(replace(
replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(
replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(
replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(
replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(
replace(replace(replace(fold_t8.fold_c8,'Ṍ','ṍ'),'Ṏ','ṏ'),'Ṑ','ṑ'),'Ṓ','ṓ'),'Ṕ','ṕ'),'Ṗ','ṗ')
,'Ṙ','ṙ'),'Ṛ','ṛ'),'Ṝ','ṝ'),'Ṟ','ṟ'),'Ṡ','ṡ'),'Ṣ','ṣ'),'Ṥ','ṥ'),'Ṧ','ṧ'),'Ṩ','ṩ'),'Ṫ','ṫ'),'Ṭ','ṭ')
,'Ṯ','ṯ'),'Ṱ','ṱ'),'Ṳ','ṳ'),'Ṵ','ṵ'),'Ṷ','ṷ'),'Ṹ','ṹ'),'Ṻ','ṻ'),'Ṽ','ṽ'),'Ṿ','ṿ'),'Ẁ','ẁ'),'Ẃ','ẃ')
,'Ẅ','ẅ'),'Ẇ','ẇ'),'Ẉ','ẉ'),'Ẋ','ẋ'),'Ẍ','ẍ'),'Ẏ','ẏ'),'Ẑ','ẑ'),'Ẓ','ẓ'),'Ẕ','ẕ'),'ẞ','ß'),'Ạ','ạ')
,'Ả','ả'),'Ấ','ấ'),'Ầ','ầ'),'Ẩ','ẩ'),'Ẫ','ẫ'),'Ậ','ậ'),'Ắ','ắ'),'Ằ','ằ'),'Ẳ','ẳ'),'Ẵ','ẵ'),'Ặ','ặ')
,'Ẹ','ẹ'),'Ẻ','ẻ'),'Ẽ','ẽ'),'Ế','ế'),'Ề','ề'),'Ể','ể'),'Ễ','ễ'),'Ệ','ệ'),'Ỉ','ỉ'),'Ị','ị')
 AS fold_c9
FROM (SELECT fold_t7.*, replace(replace(replace(replace(replace(replace(replace(replace(replace(
replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(
replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(
replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(
replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(
replace(replace(replace(fold_t7.fold_c7,'Ձ','ձ'),'Ղ','ղ'),'Ճ','ճ'),'Մ','մ'),'Յ','յ'),'Ն','ն')
,'Շ','շ'),'Ո','ո'),'Չ','չ'),'Պ','պ'),'Ջ','ջ'),'Ռ','ռ'),'Ս','ս'),'Վ','վ'),'Տ','տ'),'Ր','ր'),'Ց','ց')
,'Ւ','ւ'),'Փ','փ'),'Ք','ք'),'Օ','օ'),'Ֆ','ֆ'),'Ḁ','ḁ'),'Ḃ','ḃ'),'Ḅ','ḅ'),'Ḇ','ḇ'),'Ḉ','ḉ'),'Ḋ','ḋ')
,'Ḍ','ḍ'),'Ḏ','ḏ'),'Ḑ','ḑ'),'Ḓ','ḓ'),'Ḕ','ḕ'),'Ḗ','ḗ'),'Ḙ','ḙ'),'Ḛ','ḛ'),'Ḝ','ḝ'),'Ḟ','ḟ'),'Ḡ','ḡ')
,'Ḣ','ḣ'),'Ḥ','ḥ'),'Ḧ','ḧ'),'Ḩ','ḩ'),'Ḫ','ḫ'),'Ḭ','ḭ'),'Ḯ','ḯ'),'Ḱ','ḱ'),'Ḳ','ḳ'),'Ḵ','ḵ'),'Ḷ','ḷ')
,'Ḹ','ḹ'),'Ḻ','ḻ'),'Ḽ','ḽ'),'Ḿ','ḿ'),'Ṁ','ṁ'),'Ṃ','ṃ'),'Ṅ','ṅ'),'Ṇ','ṇ'),'Ṉ','ṉ'),'Ṋ','ṋ')
 AS fold_c8
FROM (SELECT fold_t6.*, replace(replace(replace(replace(replace(replace(replace(replace(replace(
replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(
replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(
replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(
replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(
replace(replace(replace(fold_t6.fold_c6,'Ә','ә'),'Ӛ','ӛ'),'Ӝ','ӝ'),'Ӟ','ӟ'),'Ӡ','ӡ'),'Ӣ','ӣ')
,'Ӥ','ӥ'),'Ӧ','ӧ'),'Ө','ө'),'Ӫ','ӫ'),'Ӭ','ӭ'),'Ӯ','ӯ'),'Ӱ','ӱ'),'Ӳ','ӳ'),'Ӵ','ӵ'),'Ӷ','ӷ'),'Ӹ','ӹ')
,'Ӻ','ӻ'),'Ӽ','ӽ'),'Ӿ','ӿ'),'Ԁ','ԁ'),'Ԃ','ԃ'),'Ԅ','ԅ'),'Ԇ','ԇ'),'Ԉ','ԉ'),'Ԋ','ԋ'),'Ԍ','ԍ'),'Ԏ','ԏ')
,'Ԑ','ԑ'),'Ԓ','ԓ'),'Ԕ','ԕ'),'Ԗ','ԗ'),'Ԙ','ԙ'),'Ԛ','ԛ'),'Ԝ','ԝ'),'Ԟ','ԟ'),'Ԡ','ԡ'),'Ԣ','ԣ'),'Ԥ','ԥ')
,'Ԧ','ԧ'),'Ԩ','ԩ'),'Ԫ','ԫ'),'Ԭ','ԭ'),'Ԯ','ԯ'),'Ա','ա'),'Բ','բ'),'Գ','գ'),'Դ','դ'),'Ե','ե'),'Զ','զ')
,'Է','է'),'Ը','ը'),'Թ','թ'),'Ժ','ժ'),'Ի','ի'),'Լ','լ'),'Խ','խ'),'Ծ','ծ'),'Կ','կ'),'Հ','հ')
 AS fold_c7
FROM (SELECT fold_t5.*, replace(replace(replace(replace(replace(replace(replace(replace(replace(
replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(
replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(
replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(
replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(
replace(replace(replace(fold_t5.fold_c5,'Ь','ь'),'Э','э'),'Ю','ю'),'Я','я'),'Ѡ','ѡ'),'Ѣ','ѣ')
,'Ѥ','ѥ'),'Ѧ','ѧ'),'Ѩ','ѩ'),'Ѫ','ѫ'),'Ѭ','ѭ'),'Ѯ','ѯ'),'Ѱ','ѱ'),'Ѳ','ѳ'),'Ѵ','ѵ'),'Ѷ','ѷ'),'Ѹ','ѹ')
,'Ѻ','ѻ'),'Ѽ','ѽ'),'Ѿ','ѿ'),'Ҁ','ҁ'),'Ҋ','ҋ'),'Ҍ','ҍ'),'Ҏ','ҏ'),'Ґ','ґ'),'Ғ','ғ'),'Ҕ','ҕ'),'Җ','җ')
,'Ҙ','ҙ'),'Қ','қ'),'Ҝ','ҝ'),'Ҟ','ҟ'),'Ҡ','ҡ'),'Ң','ң'),'Ҥ','ҥ'),'Ҧ','ҧ'),'Ҩ','ҩ'),'Ҫ','ҫ'),'Ҭ','ҭ')
,'Ү','ү'),'Ұ','ұ'),'Ҳ','ҳ'),'Ҵ','ҵ'),'Ҷ','ҷ'),'Ҹ','ҹ'),'Һ','һ'),'Ҽ','ҽ'),'Ҿ','ҿ'),'Ӏ','ӏ'),'Ӂ','ӂ')
,'Ӄ','ӄ'),'Ӆ','ӆ'),'Ӈ','ӈ'),'Ӊ','ӊ'),'Ӌ','ӌ'),'Ӎ','ӎ'),'Ӑ','ӑ'),'Ӓ','ӓ'),'Ӕ','ӕ'),'Ӗ','ӗ')
 AS fold_c6
FROM (SELECT fold_t4.*, replace(replace(replace(replace(replace(replace(replace(replace(replace(
replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(
replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(
replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(
replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(
replace(replace(replace(fold_t4.fold_c4,'Ϟ','ϟ'),'Ϡ','ϡ'),'Ϣ','ϣ'),'Ϥ','ϥ'),'Ϧ','ϧ'),'Ϩ','ϩ')
,'Ϫ','ϫ'),'Ϭ','ϭ'),'Ϯ','ϯ'),'ϴ','θ'),'Ϸ','ϸ'),'Ϲ','ϲ'),'Ϻ','ϻ'),'Ͻ','ͻ'),'Ͼ','ͼ'),'Ͽ','ͽ'),'Ѐ','ѐ')
,'Ё','ё'),'Ђ','ђ'),'Ѓ','ѓ'),'Є','є'),'Ѕ','ѕ'),'І','і'),'Ї','ї'),'Ј','ј'),'Љ','љ'),'Њ','њ'),'Ћ','ћ')
,'Ќ','ќ'),'Ѝ','ѝ'),'Ў','ў'),'Џ','џ'),'А','а'),'Б','б'),'В','в'),'Г','г'),'Д','д'),'Е','е'),'Ж','ж')
,'З','з'),'И','и'),'Й','й'),'К','к'),'Л','л'),'М','м'),'Н','н'),'О','о'),'П','п'),'Р','р'),'С','с')
,'Т','т'),'У','у'),'Ф','ф'),'Х','х'),'Ц','ц'),'Ч','ч'),'Ш','ш'),'Щ','щ'),'Ъ','ъ'),'Ы','ы')
 AS fold_c5
FROM (SELECT fold_t3.*, replace(replace(replace(replace(replace(replace(replace(replace(replace(
replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(
replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(
replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(
replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(
replace(replace(replace(fold_t3.fold_c3,'Ȩ','ȩ'),'Ȫ','ȫ'),'Ȭ','ȭ'),'Ȯ','ȯ'),'Ȱ','ȱ'),'Ȳ','ȳ')
,'Ⱥ','ⱥ'),'Ȼ','ȼ'),'Ƚ','ƚ'),'Ⱦ','ⱦ'),'Ɂ','ɂ'),'Ƀ','ƀ'),'Ʉ','ʉ'),'Ʌ','ʌ'),'Ɇ','ɇ'),'Ɉ','ɉ'),'Ɋ','ɋ')
,'Ɍ','ɍ'),'Ɏ','ɏ'),'Ͱ','ͱ'),'Ͳ','ͳ'),'Ͷ','ͷ'),'Ϳ','ϳ'),'Ά','ά'),'Έ','έ'),'Ή','ή'),'Ί','ί'),'Ό','ό')
,'Ύ','ύ'),'Ώ','ώ'),'Α','α'),'Β','β'),'Γ','γ'),'Δ','δ'),'Ε','ε'),'Ζ','ζ'),'Η','η'),'Θ','θ'),'Ι','ι')
,'Κ','κ'),'Λ','λ'),'Μ','μ'),'Ν','ν'),'Ξ','ξ'),'Ο','ο'),'Π','π'),'Ρ','ρ'),'Σ','σ'),'Τ','τ'),'Υ','υ')
,'Φ','φ'),'Χ','χ'),'Ψ','ψ'),'Ω','ω'),'Ϊ','ϊ'),'Ϋ','ϋ'),'Ϗ','ϗ'),'Ϙ','ϙ'),'Ϛ','ϛ'),'Ϝ','ϝ')
 AS fold_c4
FROM (SELECT fold_t2.*, replace(replace(replace(replace(replace(replace(replace(replace(replace(
replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(
replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(
replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(
replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(
replace(replace(replace(fold_t2.fold_c2,'Ư','ư'),'Ʊ','ʊ'),'Ʋ','ʋ'),'Ƴ','ƴ'),'Ƶ','ƶ'),'Ʒ','ʒ')
,'Ƹ','ƹ'),'Ƽ','ƽ'),'Ǆ','ǆ'),'ǅ','ǆ'),'Ǉ','ǉ'),'ǈ','ǉ'),'Ǌ','ǌ'),'ǋ','ǌ'),'Ǎ','ǎ'),'Ǐ','ǐ'),'Ǒ','ǒ')
,'Ǔ','ǔ'),'Ǖ','ǖ'),'Ǘ','ǘ'),'Ǚ','ǚ'),'Ǜ','ǜ'),'Ǟ','ǟ'),'Ǡ','ǡ'),'Ǣ','ǣ'),'Ǥ','ǥ'),'Ǧ','ǧ'),'Ǩ','ǩ')
,'Ǫ','ǫ'),'Ǭ','ǭ'),'Ǯ','ǯ'),'Ǳ','ǳ'),'ǲ','ǳ'),'Ǵ','ǵ'),'Ƕ','ƕ'),'Ƿ','ƿ'),'Ǹ','ǹ'),'Ǻ','ǻ'),'Ǽ','ǽ')
,'Ǿ','ǿ'),'Ȁ','ȁ'),'Ȃ','ȃ'),'Ȅ','ȅ'),'Ȇ','ȇ'),'Ȉ','ȉ'),'Ȋ','ȋ'),'Ȍ','ȍ'),'Ȏ','ȏ'),'Ȑ','ȑ'),'Ȓ','ȓ')
,'Ȕ','ȕ'),'Ȗ','ȗ'),'Ș','ș'),'Ț','ț'),'Ȝ','ȝ'),'Ȟ','ȟ'),'Ƞ','ƞ'),'Ȣ','ȣ'),'Ȥ','ȥ'),'Ȧ','ȧ')
 AS fold_c3
FROM (SELECT fold_t1.*, replace(replace(replace(replace(replace(replace(replace(replace(replace(
replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(
replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(
replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(
replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(
replace(replace(replace(fold_t1.fold_c1,'Ŀ','ŀ'),'Ł','ł'),'Ń','ń'),'Ņ','ņ'),'Ň','ň'),'Ŋ','ŋ')
,'Ō','ō'),'Ŏ','ŏ'),'Ő','ő'),'Œ','œ'),'Ŕ','ŕ'),'Ŗ','ŗ'),'Ř','ř'),'Ś','ś'),'Ŝ','ŝ'),'Ş','ş'),'Š','š')
,'Ţ','ţ'),'Ť','ť'),'Ŧ','ŧ'),'Ũ','ũ'),'Ū','ū'),'Ŭ','ŭ'),'Ů','ů'),'Ű','ű'),'Ų','ų'),'Ŵ','ŵ'),'Ŷ','ŷ')
,'Ÿ','ÿ'),'Ź','ź'),'Ż','ż'),'Ž','ž'),'Ɓ','ɓ'),'Ƃ','ƃ'),'Ƅ','ƅ'),'Ɔ','ɔ'),'Ƈ','ƈ'),'Ɖ','ɖ'),'Ɗ','ɗ')
,'Ƌ','ƌ'),'Ǝ','ǝ'),'Ə','ə'),'Ɛ','ɛ'),'Ƒ','ƒ'),'Ɠ','ɠ'),'Ɣ','ɣ'),'Ɩ','ɩ'),'Ɨ','ɨ'),'Ƙ','ƙ'),'Ɯ','ɯ')
,'Ɲ','ɲ'),'Ɵ','ɵ'),'Ơ','ơ'),'Ƣ','ƣ'),'Ƥ','ƥ'),'Ʀ','ʀ'),'Ƨ','ƨ'),'Ʃ','ʃ'),'Ƭ','ƭ'),'Ʈ','ʈ')
 AS fold_c2
FROM (SELECT fold_t0.*, replace(replace(replace(replace(replace(replace(replace(replace(replace(
replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(
replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(
replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(
replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(replace(
replace(replace(replace(fold_t0.fold_in,'À','à'),'Á','á'),'Â','â'),'Ã','ã'),'Ä','ä'),'Å','å')
,'Æ','æ'),'Ç','ç'),'È','è'),'É','é'),'Ê','ê'),'Ë','ë'),'Ì','ì'),'Í','í'),'Î','î'),'Ï','ï'),'Ð','ð')
,'Ñ','ñ'),'Ò','ò'),'Ó','ó'),'Ô','ô'),'Õ','õ'),'Ö','ö'),'Ø','ø'),'Ù','ù'),'Ú','ú'),'Û','û'),'Ü','ü')
,'Ý','ý'),'Þ','þ'),'Ā','ā'),'Ă','ă'),'Ą','ą'),'Ć','ć'),'Ĉ','ĉ'),'Ċ','ċ'),'Č','č'),'Ď','ď'),'Đ','đ')
,'Ē','ē'),'Ĕ','ĕ'),'Ė','ė'),'Ę','ę'),'Ě','ě'),'Ĝ','ĝ'),'Ğ','ğ'),'Ġ','ġ'),'Ģ','ģ'),'Ĥ','ĥ'),'Ħ','ħ')
,'Ĩ','ĩ'),'Ī','ī'),'Ĭ','ĭ'),'Į','į'),'Ĳ','ĳ'),'Ĵ','ĵ'),'Ķ','ķ'),'Ĺ','ĺ'),'Ļ','ļ'),'Ľ','ľ')
 AS fold_c1
FROM (SELECT ri.record_id, ri.field, ri.value AS fold_in FROM record_index ri JOIN index_fields f
    ON f.object_id = ri.object_id AND f.name = ri.field AND f.type IN ('text', 'email')
  WHERE ri.unique_key IS NOT NULL AND length(CAST(ri.value AS BLOB)) > length(ri.value))
 fold_t0) fold_t1) fold_t2) fold_t3) fold_t4) fold_t5) fold_t6) fold_t7) fold_t8) fold_t9) k
WHERE record_index.record_id = k.record_id AND record_index.field = k.field
  AND record_index.unique_key IS NOT k.folded;
