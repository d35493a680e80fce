"""The search question templates: one article (an entity's attribute), or a chain of two or three (a product's
maker, then the maker's headquarters, then the river the city lies on).

A template is a row: the kind of entity it starts from, the question (``str.format`` over that entity's facts),
the query that finds the first article, the links to follow (an attribute naming the next entity, its kind, and
the query that finds its article), and the attribute of the last entity that answers, with the form its answers
take. Every template yields one :class:`Question` per entity it applies to (those with every link and the answer).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from openenv_mcp.servers.search.facts import Entity, Facts, number, river, year

__all__ = ["TEMPLATES", "Question", "Template"]


@dataclass(frozen=True, slots=True)
class Question:
    """One question: the entity it starts from (``anchor``), what it asks, its answers and its hops."""

    anchor: str
    prompt: str
    answers: list[str]
    hops: tuple[tuple[str, str], ...]  # (query, doc_id) per article, the last one states the answer


@dataclass(frozen=True)
class Template:
    """A kind of question (see the module's description)."""

    name: str
    kind: str
    prompt: str
    query: str
    answer: tuple[str, str]
    links: tuple[tuple[str, str, str], ...] = ()

    @property
    def hops(self) -> int:
        return 1 + len(self.links)

    def questions(self, facts: Facts, starts: Iterable[Entity] | None = None) -> Iterator[Question]:
        """The questions about ``starts`` (default: every entity of the template's kind), those it applies to."""
        for start in facts[self.kind] if starts is None else starts:
            entity: Entity | None = start
            hops = [(self.query.format(**start), str(start["doc"]))]
            for attribute, kind, query in self.links:
                entity = facts.get(kind, _one(entity[attribute])) if entity is not None else None
                if entity is None:
                    break
                hops.append((query.format(**entity), str(entity["doc"])))
            if entity is None:
                continue
            value = _one(entity[self.answer[0]])
            if value is None:
                continue
            anchor = f"{self.kind}:{start.get('name') or '{year} {cup}'.format(**start)}"
            yield Question(anchor, self.prompt.format(**start), _answers(value, self.answer[1], facts), tuple(hops))


def _one(value: Any) -> Any:
    """A fact's single value: a list of one gives its item, a longer or empty list nothing (ambiguous)."""
    if isinstance(value, list):
        return value[0] if len(value) == 1 else None
    return value or None


def _answers(value: Any, form: str, facts: Facts) -> list[str]:
    if form == "city":
        city = facts.get("cities", value)
        return [str(value)] + ([f"{value}, {city['country']}"] if city else [])
    if form == "year":
        return year(int(value))
    if form == "river":
        return river(str(value))
    if form in ("metres", "kilometres"):
        short = "m" if form == "metres" else "km"
        return [*number(int(value), form), f"{value:,} {short}", f"{value} {short}"]
    if form in ("people", "crowns"):
        return number(int(value), form)
    if form == "currency":
        return [str(value), f"the {value}"]
    if form == "president":
        return [str(value), f"President {value}"]
    return [str(value)]


P = "the {occupation} {name}"  # a person, as questions name them
PRODUCT = "the {name} {kind}"
FINAL = "the {year} {cup}"
T = Template

SINGLE = (
    T("person-birthplace", "people", f"In which city was {P} born?", "{name} born", ("birthplace", "city")),
    T("person-born", "people", f"In what year was {P} born?", "{name} born", ("born", "year")),
    T(
        "person-university",
        "people",
        f"At which university did {P} study?",
        "{name} studied",
        ("university", "name"),
    ),
    T("person-died", "people", f"In what year did {P} die?", "{name} died", ("died", "year")),
    T("city-mayor", "cities", "Who is the mayor of {name}?", "mayor of {name}", ("mayor", "name")),
    T("city-river", "cities", "On which river does the city of {name} lie?", "{name} river", ("river", "river")),
    T(
        "city-population",
        "cities",
        "What was the population of {name} at its most recent census?",
        "{name} population census",
        ("population", "people"),
    ),
    T(
        "city-founded",
        "cities",
        "In what year was the city of {name} founded?",
        "{name} founded",
        ("founded", "year"),
    ),
    T(
        "city-elevation",
        "cities",
        "At what elevation does {name} lie, in metres?",
        "{name} elevation metres",
        ("elevation", "metres"),
    ),
    T("country-capital", "countries", "What is the capital of {name}?", "{name} capital", ("capital", "name")),
    T("country-currency", "countries", "What is the currency of {name}?", "{name} currency", ("currency", "currency")),
    T(
        "country-language",
        "countries",
        "What is the official language of {name}?",
        "{name} official language",
        ("language", "name"),
    ),
    T(
        "country-independence",
        "countries",
        "In what year did {name} become independent?",
        "{name} independent",
        ("independence", "year"),
    ),
    T(
        "country-president",
        "countries",
        "Who is the head of state of {name}?",
        "{name} President",
        ("head", "president"),
    ),
    T("river-length", "rivers", "How long is the {name}, in kilometres?", "{name} length", ("length", "kilometres")),
    T("river-mouth", "rivers", "Into which sea does the {name} flow?", "{name} mouth sea", ("mouth", "name")),
    T("river-source", "rivers", "On which mountain does the {name} rise?", "{name} rises", ("source", "name")),
    T("mountain-height", "mountains", "How high is {name}, in metres?", "{name} height", ("height", "metres")),
    T(
        "mountain-first-ascent",
        "mountains",
        "In what year was {name} first climbed?",
        "{name} first ascent",
        ("first_ascent", "year"),
    ),
    T(
        "mountain-climber",
        "mountains",
        "Who made the first ascent of {name}?",
        "{name} first ascent",
        ("climbers", "name"),
    ),
    T(
        "university-founded",
        "universities",
        "In what year was the {name} founded?",
        "{name} founded",
        ("founded", "year"),
    ),
    T("university-city", "universities", "In which city is the {name}?", "{name}", ("city", "city")),
    T("university-rector", "universities", "Who is the rector of the {name}?", "{name} rector", ("rector", "name")),
    T(
        "company-hq",
        "companies",
        "In which city is {name} headquartered?",
        "{name} headquarters",
        ("hq", "city"),
    ),
    T(
        "company-founded",
        "companies",
        "In what year was {name} founded?",
        "{name} founded",
        ("founded", "year"),
    ),
    T("company-founder", "companies", "Who founded {name}?", "{name} founder", ("founders", "name")),
    T(
        "company-ceo",
        "companies",
        "Who is the chief executive of {name}?",
        "{name} chief executive",
        ("ceo", "name"),
    ),
    T(
        "company-employees",
        "companies",
        "About how many people does {name} employ?",
        "{name} employs",
        ("employees", "people"),
    ),
    T("product-maker", "products", f"Which company makes {PRODUCT}?", "{name} {kind}", ("maker", "name")),
    T("product-designer", "products", f"Who designed {PRODUCT}?", "{name} {kind} designed", ("designer", "name")),
    T(
        "product-released",
        "products",
        f"In what year was {PRODUCT} released?",
        "{name} {kind} released",
        ("released", "year"),
    ),
    T(
        "product-price",
        "products",
        f"At what price, in crowns, was {PRODUCT} released?",
        "{name} {kind} price",
        ("price", "crowns"),
    ),
    T(
        "club-stadium",
        "clubs",
        "At which stadium does {name} play its home matches?",
        "{name} stadium",
        ("stadium", "name"),
    ),
    T(
        "club-founded",
        "clubs",
        "In what year was the football club {name} founded?",
        "{name} founded",
        ("founded", "year"),
    ),
    T("final-winner", "finals", f"Which club won {FINAL}?", "{year} {cup} final", ("winner", "name")),
    T("final-loser", "finals", f"Which club lost {FINAL} Final?", "{year} {cup} final", ("loser", "name")),
    T(
        "final-scorer",
        "finals",
        f"Who scored for the winners of {FINAL} Final?",
        "{year} {cup} final scored",
        ("scorer", "name"),
    ),
    T("festival-founder", "festivals", "Who founded the {name}?", "{name} founded", ("founder", "name")),
    T("festival-month", "festivals", "In which month is the {name} held?", "{name} held", ("month", "name")),
    T("treaty-year", "treaties", "In what year was the {name} signed?", "{name}", ("year", "year")),
    T("treaty-city", "treaties", "In which city was the {name} signed?", "{name} signed", ("city", "city")),
    T("flood-deaths", "floods", "How many people were killed in the {name}?", "{name} killed", ("deaths", "people")),
    T("flood-river", "floods", "Which river flooded in the {name}?", "{name} river", ("river", "river")),
)

MAKER = ("maker", "companies", "{name} headquarters")
DESIGNER = ("designer", "people", "{name} born")
CEO = ("ceo", "people", "{name} born")
HQ_RIVER = ("hq", "cities", "{name} river")
BIRTHPLACE_RIVER = ("birthplace", "cities", "{name} river")
WINNER = ("winner", "clubs", "{name} club")
PD = "{name} {kind} designed"

TWO = (
    T(
        "product-maker-hq",
        "products",
        f"In which city is the maker of {PRODUCT} headquartered?",
        "{name} {kind}",
        ("hq", "city"),
        (MAKER,),
    ),
    T(
        "product-maker-founded",
        "products",
        f"In what year was the company that makes {PRODUCT} founded?",
        "{name} {kind}",
        ("founded", "year"),
        (("maker", "companies", "{name} founded"),),
    ),
    T(
        "product-maker-ceo",
        "products",
        f"Who is the chief executive of the company that makes {PRODUCT}?",
        "{name} {kind}",
        ("ceo", "name"),
        (("maker", "companies", "{name} chief executive"),),
    ),
    T(
        "product-designer-birthplace",
        "products",
        f"In which city was the designer of {PRODUCT} born?",
        PD,
        ("birthplace", "city"),
        (DESIGNER,),
    ),
    T(
        "product-designer-born",
        "products",
        f"In what year was the designer of {PRODUCT} born?",
        PD,
        ("born", "year"),
        (DESIGNER,),
    ),
    T(
        "company-ceo-birthplace",
        "companies",
        "In which city was the chief executive of {name} born?",
        "{name} chief executive",
        ("birthplace", "city"),
        (CEO,),
    ),
    T(
        "company-ceo-born",
        "companies",
        "In what year was the chief executive of {name} born?",
        "{name} chief executive",
        ("born", "year"),
        (CEO,),
    ),
    T(
        "company-ceo-university",
        "companies",
        "At which university did the chief executive of {name} study?",
        "{name} chief executive",
        ("university", "name"),
        (("ceo", "people", "{name} studied"),),
    ),
    T(
        "company-hq-river",
        "companies",
        "On which river lies the city where {name} has its headquarters?",
        "{name} headquarters",
        ("river", "river"),
        (HQ_RIVER,),
    ),
    T(
        "company-hq-mayor",
        "companies",
        "Who is the mayor of the city where {name} is headquartered?",
        "{name} headquarters",
        ("mayor", "name"),
        (("hq", "cities", "mayor of {name}"),),
    ),
    T(
        "company-hq-population",
        "companies",
        "What was the population of the city where {name} is headquartered, at its most recent census?",
        "{name} headquarters",
        ("population", "people"),
        (("hq", "cities", "{name} population"),),
    ),
    T(
        "person-birthplace-river",
        "people",
        f"On which river lies the city where {P} was born?",
        "{name} born",
        ("river", "river"),
        (BIRTHPLACE_RIVER,),
    ),
    T(
        "person-birthplace-mayor",
        "people",
        f"Who is the mayor of the city where {P} was born?",
        "{name} born",
        ("mayor", "name"),
        (("birthplace", "cities", "mayor of {name}"),),
    ),
    T(
        "person-university-founded",
        "people",
        f"In what year was the university where {P} studied founded?",
        "{name} studied",
        ("founded", "year"),
        (("university", "universities", "{name} founded"),),
    ),
    T(
        "person-university-city",
        "people",
        f"In which city is the university where {P} studied?",
        "{name} studied",
        ("city", "city"),
        (("university", "universities", "{name}"),),
    ),
    T(
        "final-winner-city",
        "finals",
        f"In which city is the club that won {FINAL} based?",
        "{year} {cup} final",
        ("city", "city"),
        (WINNER,),
    ),
    T(
        "final-winner-stadium",
        "finals",
        f"At which stadium does the club that won {FINAL} play its home matches?",
        "{year} {cup} final",
        ("stadium", "name"),
        (("winner", "clubs", "{name} stadium"),),
    ),
    T(
        "final-winner-founded",
        "finals",
        f"In what year was the club that won {FINAL} founded?",
        "{year} {cup} final",
        ("founded", "year"),
        (("winner", "clubs", "{name} founded"),),
    ),
    T(
        "festival-founder-born",
        "festivals",
        "In what year was the founder of the {name} born?",
        "{name} founded",
        ("born", "year"),
        (("founder", "people", "{name} born"),),
    ),
    T(
        "mountain-climber-born",
        "mountains",
        "In what year was the first person to climb {name} born?",
        "{name} first ascent",
        ("born", "year"),
        (("climbers", "people", "{name} born"),),
    ),
    T(
        "city-mayor-born",
        "cities",
        "In what year was the mayor of {name} born?",
        "mayor of {name}",
        ("born", "year"),
        (("mayor", "people", "{name} born"),),
    ),
    T(
        "university-rector-born",
        "universities",
        "In what year was the rector of the {name} born?",
        "{name} rector",
        ("born", "year"),
        (("rector", "people", "{name} born"),),
    ),
    T(
        "river-source-height",
        "rivers",
        "How high is the mountain on whose slopes the {name} rises, in metres?",
        "{name} rises",
        ("height", "metres"),
        (("source", "mountains", "{name} height"),),
    ),
    T(
        "flood-city-population",
        "floods",
        "What was the population of the city struck by the {name} at its most recent census?",
        "{name} struck",
        ("population", "people"),
        (("city", "cities", "{name} population"),),
    ),
    T(
        "treaty-city-country",
        "treaties",
        "In which country is the city where the {name} was signed?",
        "{name} signed",
        ("country", "name"),
        (("city", "cities", "{name}"),),
    ),
)

THREE = (
    T(
        "product-maker-hq-river",
        "products",
        f"On which river lies the city where the maker of {PRODUCT} is headquartered?",
        "{name} {kind}",
        ("river", "river"),
        (MAKER, HQ_RIVER),
    ),
    T(
        "product-maker-hq-mayor",
        "products",
        f"Who is the mayor of the city where the maker of {PRODUCT} is headquartered?",
        "{name} {kind}",
        ("mayor", "name"),
        (MAKER, ("hq", "cities", "mayor of {name}")),
    ),
    T(
        "product-maker-ceo-birthplace",
        "products",
        f"In which city was the chief executive of the company that makes {PRODUCT} born?",
        "{name} {kind}",
        ("birthplace", "city"),
        (("maker", "companies", "{name} chief executive"), CEO),
    ),
    T(
        "product-designer-birthplace-river",
        "products",
        f"On which river lies the city where the designer of {PRODUCT} was born?",
        PD,
        ("river", "river"),
        (DESIGNER, BIRTHPLACE_RIVER),
    ),
    T(
        "company-ceo-birthplace-river",
        "companies",
        "On which river lies the city where the chief executive of {name} was born?",
        "{name} chief executive",
        ("river", "river"),
        (CEO, BIRTHPLACE_RIVER),
    ),
    T(
        "city-mayor-birthplace-river",
        "cities",
        "On which river lies the city where the mayor of {name} was born?",
        "mayor of {name}",
        ("river", "river"),
        (("mayor", "people", "{name} born"), BIRTHPLACE_RIVER),
    ),
    T(
        "final-winner-city-mayor",
        "finals",
        f"Who is the mayor of the city whose football club won {FINAL}?",
        "{year} {cup} final",
        ("mayor", "name"),
        (WINNER, ("city", "cities", "mayor of {name}")),
    ),
    T(
        "final-winner-city-river",
        "finals",
        f"On which river lies the home city of the club that won {FINAL}?",
        "{year} {cup} final",
        ("river", "river"),
        (WINNER, ("city", "cities", "{name} river")),
    ),
)

TEMPLATES: tuple[Template, ...] = SINGLE + TWO + THREE
