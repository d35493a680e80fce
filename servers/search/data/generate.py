#!/usr/bin/env python3
"""Deterministic generator for the search environment's corpus and tasks.

Writes, next to this file:

* ``corpus.jsonl.gz``: a fictional encyclopedia and news archive, one JSON object per line
  (``doc_id``, ``title``, ``category``, ``date``, ``text``), about 1,300 documents;
* ``tasks.json``: question-answer tasks whose answers are stated in the corpus, each with
  the documents that hold the answer (``evidence``) and, per hop, a natural query that
  should find them (``hops``, used by the tests, never shown to the agent);
* ``facts.json.gz``: the world's facts per entity with the doc_id of its article, from which
  ``openenv_mcp.servers.search.generator`` builds its single- and multi-hop questions.

The world is built first (countries, cities, rivers, mountains, people, universities,
companies, products, clubs, festivals, treaties, floods, cup finals, news), then every
document is rendered from it, so facts agree across documents. Vocabulary overlaps on
purpose: company names share prefixes ("Kestrel Motors", "Kestrel Aerospace"), surnames
repeat, cup finals differ only by year, and cities appear in many documents.

Python stdlib only; all randomness comes from ``random.Random(SEED)`` and the gzip header
carries no timestamp, so the output is byte-for-byte reproducible. Regenerate with::

    python servers/search/data/generate.py

The text is our own generated text, under the project's licence (Apache-2.0).
"""

from __future__ import annotations

import datetime as dt
import gzip
import json
import random
import re
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path

SEED = 20251121
HERE = Path(__file__).resolve().parent
CORPUS_PATH = HERE / "corpus.jsonl.gz"
TASKS_PATH = HERE / "tasks.json"
FACTS_PATH = HERE / "facts.json.gz"


def words(text: str) -> list[str]:
    """A word list written as one string."""
    return text.split()


MONTHS = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
]

# --------------------------------------------------------------------------
# Word lists
# --------------------------------------------------------------------------

# (name, adjective, currency, language, continent phrase)
COUNTRIES = [
    ("Marovia", "Marovian", "Marovian crown", "Marovian", "on the western coast of the Eskarian continent"),
    ("Kelmaria", "Kelmarian", "kelmar", "Kelmarian", "in the highlands of central Eskaria"),
    ("Ostravia", "Ostravian", "ostra", "Ostravian", "on the northern shore of the Pale Sea"),
    ("Duvanne", "Duvannese", "Duvannese franc", "Duvannese", "between the Corran Mountains and the Amber Gulf"),
    ("Sarnland", "Sarnish", "Sarnish mark", "Sarnish", "on a peninsula in the cold Northern Reach"),
    ("Vetrovia", "Vetrovian", "vetro", "Vetrovian", "in the river plains of eastern Eskaria"),
    ("Aldmark", "Aldmarkian", "Aldmark krone", "Aldic", "on the islands and fjords of the Skerrow Sea"),
    ("Quessa", "Quessan", "Quessan real", "Quessan", "on the warm southern coast of the Amber Gulf"),
    ("Belgarde", "Belgardian", "Belgarde dinar", "Belgardian", "in the valleys south of the Corran Mountains"),
    ("Norvaal", "Norvaali", "Norvaal dollar", "Norvaali", "on the broad tundra of the Northern Reach"),
    ("Tirassa", "Tirassan", "tira", "Tirassan", "on a chain of volcanic islands in the Sunward Ocean"),
    ("Calvadia", "Calvadian", "Calvadian peso", "Calvadian", "on the dry plateau of southern Eskaria"),
]
SEAS = ["Pale Sea", "Amber Gulf", "Skerrow Sea", "Sunward Ocean", "Northern Reach", "Gulf of Tessel"]

FIRST_NAMES = words(
    "Amara Anders Beatrix Bram Camille Casimir Dalia Dario Elin Emeka Esther Farid Freya Gideon Greta Hana Hugo "
    "Ida Ilias Imogen Isak Jana Joaquin Katya Kenji Lale Leander Linnea Luca Mads Maren Mateo Mira Nadia Niall "
    "Noor Oskar Otto Paloma Petra Priya Quentin Rafael Rosa Rune Saoirse Selim Signe Silas Tamsin Teodor Thea "
    "Tobias Ulla Valentin Vera Viktor Wanda Yara Yusuf Zofia Adele Aurelio Benedikt Carys Desmond Edda Elio Fenna "
    "Florian Gisela Halvard Ines Jonas Kaia Lorcan Magnus Nell Odile Pavel Renata Sander Solveig Tariq Una Xavier "
    "Zainab Agnes Bastian Clio Dorian Elif Ferdinand Hedda Ivo Johanna Konrad Liv Marius Nico Olga Per Ruth "
    "Stellan Tilde Aksel Birgit Cyprian Dagny Emil Flora Gustav Helga Ingrid Jasper Kasimir Lotte Milan Nora"
)
SURNAMES = words(
    "Halvorsen Okonkwo Varga Lindqvist Moreau Takeda Brandt Castellano Dvorak Eriksen Falk Grieve Haddad Ibarra "
    "Jansen Kowalczyk Lachance Novak Oyelaran Petrov Quist Rasmussen Sandoval Thorne Uribe Vance Wexler Yilmaz "
    "Zeller Abernathy Bellweather Corvin Demir Eastwick Fairbairn Galloway Hartigan Isberg Jovanovic Kessler "
    "Lorimer Marchetti Nakamura Ostrowski Pellegrini Quinlan Rossiter Strand Tamura Ulvaeus Valdez Whitlock "
    "Achterberg Barros Cavanagh Dahl Engstrom Ferreira Gallagher Holm Iwata Juhl Kaur Lindgren Mendez Norberg "
    "Olsen Prasad Reyes Solberg Toivonen Unger Voss Weiss Aalto Bergstrom Cardenas Drummond Esposito Fitzroy "
    "Gunnarsson Hakimi Ingram Kovac Larsen Mbatha Nilsen Ortega Pham Roux Sato Tanaka Vidal Wainwright Zamora "
    "Ahlberg Brennan Calloway Dimitrov Ekberg Foley Greco Hoffman Ivanova Kerr Lund Mosley Nyberg Orsini Paz"
)
COMPANY_PREFIXES = words(
    "Kestrel Nordbrook Halvane Lumen Arkwright Ferrox Tidewater Brightmoor Copperline Veridian Stonebridge "
    "Ashgrove Bluefen Corvane Driftwood Emberly Falconer Greyhaven Harrow Ironvale Juniper Kingsmere Larkspur "
    "Meridian Northwind Oakhurst Pinecrest Redwater Silverline Thornbury Valecrest Westmarch Yarrow Zephyr "
    "Amberly Cobalt Dunmore Elmstead Foxglove Glasswing Highmoor Jadeport Kelso Lowther Marlow Orchard "
    "Palisade Quill Rookwood Saltmarsh Tanner Upland Vantage Wren Alder"
)
# industry -> (name suffixes, product kinds)
INDUSTRIES: dict[str, tuple[list[str], list[str]]] = {
    "aerospace": (["Aerospace", "Aviation"], ["light aircraft", "glider", "weather satellite", "cargo drone"]),
    "automotive": (["Motors", "Automotive"], ["hatchback", "electric saloon", "pickup truck", "motorcycle", "tractor"]),
    "energy": (["Energy", "Power"], ["wind turbine", "home battery", "solar panel", "heat pump", "tidal generator"]),
    "food": (["Foods", "Dairy", "Brewing"], ["oat biscuit", "blue cheese", "lager", "chocolate bar", "rye crispbread"]),
    "software": (["Software", "Systems"], ["accounting program", "operating system", "spreadsheet", "web browser"]),
    "pharmaceuticals": (["Pharmaceuticals", "Biotech"], ["heart medication", "malaria vaccine", "antibiotic"]),
    "shipping": (["Shipping", "Lines"], ["container ship", "passenger ferry", "icebreaker", "river barge"]),
    "telecommunications": (["Telecom", "Networks"], ["mobile phone", "satellite phone", "fibre router", "smartwatch"]),
    "electronics": (["Electronics", "Instruments", "Optics"], ["pocket calculator", "telescope", "microscope"]),
    "robotics": (["Robotics", "Automation"], ["warehouse robot", "surgical robot", "robotic lawnmower"]),
    "banking": (["Bank", "Capital"], []),
    "textiles": (["Textiles", "Mills"], ["raincoat", "wool blanket", "climbing rope", "sailcloth"]),
    "games": (["Games", "Interactive"], ["video game", "board game", "handheld console"]),
    "railways": (["Rail", "Locomotive Works"], ["steam locomotive", "diesel locomotive", "high-speed train", "tram"]),
}
STEMS = words(
    "vel kas mor tal bren ost quil dra har lun ser cor amb fen gald ir jor kel mar nor pel rav sol thal ul var wes "
    "yar zen bel cal dun el fal gor hal ist kor lor mel nav orn pra ros sar tor ves wyn ald bar cas del fer gil "
    "lys mir ned pav rhen stav tam ulm vor wal ard bry cres dor em frey glen hav jas kil lin mon sten tre aver "
    "brav cael dren esk fros grim hel isa kal lum mael norr oss rin sil tav vard wen"
)
PARTIES = ["Liberal Union", "Green Alliance", "People's Party", "Social Democrats", "Farmers' League", "Civic Forum"]
# how an industry reads before "company"
INDUSTRY_NOUN = {"railways": "railway", "textiles": "textile", "pharmaceuticals": "pharmaceutical"}
MODEL_WORDS = words(
    "Aria Orrin Vela Corsa Nimbus Tessa Rook Halo Juno Lyra Sable Tarn Vireo Ardent Bolt Cirrus Delta Echo Fjord "
    "Gale Heron Iris Jolt Kite Lark Mistral Nova Onyx Petrel Quartz Rill Sirocco Talon Umbra Vector Wisp Zenith "
    "Brisk Cinder Drift Ember Flint Glint Harbor Ingot Jasper Karst Lumen Marlin Nettle Opal Prism Quill Rune"
)
AWARDS = [
    "Halden Medal",
    "Order of the Silver Heron",
    "Varga Prize for Engineering",
    "Eskarian Academy Gold Medal",
    "Lindqvist Prize for Literature",
    "Amber Gulf Peace Award",
    "Corran Prize in Physics",
    "Thorne Medal for Architecture",
]
SUBJECTS = [
    "physics",
    "chemistry",
    "mechanical engineering",
    "electrical engineering",
    "economics",
    "law",
    "medicine",
    "mathematics",
    "architecture",
    "history",
    "biology",
    "computer science",
    "philosophy",
    "geology",
]
CITY_ORIGINS = [
    "a fishing village",
    "a river crossing",
    "a hilltop fortress",
    "a trading post",
    "a monastery settlement",
    "a mining camp",
    "a market town",
    "a royal hunting lodge",
]
CITY_INDUSTRIES = [
    "shipbuilding",
    "textile manufacturing",
    "tourism",
    "banking",
    "fishing",
    "mining",
    "software development",
    "brewing",
    "wine making",
    "steel production",
    "logistics",
    "higher education",
    "forestry",
    "printing",
    "car manufacturing",
]
FESTIVAL_KINDS = ["Jazz", "Film", "Lantern", "Harvest", "Book", "Folk Music", "Kite", "Theatre", "Light", "Choir"]
SPORTS = ["football", "ice hockey", "basketball", "handball"]
CLUB_SUFFIXES = ["Rovers", "United", "Athletic", "Wanderers", "City", "Albion", "Harriers", "Rangers"]
TREATY_PURPOSES = [
    ("shared the waters of the {river} between the signatories", "water sharing"),
    ("settled the border along the {river}", "border settlement"),
    ("abolished customs duties on grain, timber and salt", "trade"),
    ("created a joint commission for fisheries in the {sea}", "fisheries"),
    ("ended the Salt War and exchanged prisoners", "peace"),
    ("opened the mountain passes of the {range} to free travel", "free travel"),
]
DISCOVERIES = [
    "a bacterium that breaks down plastic in cold sea water",
    "a new species of blind cave salamander",
    "a ceramic that conducts electricity at record temperatures",
    "a method for storing solar heat in molten salt",
    "the remains of a bronze-age harbour",
    "a comet that returns every 212 years",
    "a drought-tolerant variety of barley",
    "an enzyme that speeds up the healing of burns",
    "a faster algorithm for routing container ships",
    "fossil footprints of a giant flightless bird",
]

# --------------------------------------------------------------------------
# The world
# --------------------------------------------------------------------------


@dataclass(eq=False)
class Country:
    name: str
    adjective: str
    currency: str
    language: str
    where: str
    independence: int = 0
    population: int = 0
    area: int = 0
    capital: City | None = None
    head: Person | None = None
    head_since: int = 0
    cities: list[City] = field(default_factory=list)


@dataclass(eq=False)
class Range:
    name: str
    country: Country


@dataclass(eq=False)
class Mountain:
    name: str
    range: Range
    height: int
    first_ascent: int
    climbers: list[Person] = field(default_factory=list)
    rivers: list[River] = field(default_factory=list)


@dataclass(eq=False)
class River:
    name: str
    countries: list[Country]
    length: int
    source: Mountain
    mouth: str
    cities: list[City] = field(default_factory=list)


@dataclass(eq=False)
class City:
    name: str
    country: Country
    population: int
    founded: int
    origin: str
    elevation: int
    industries: list[str]
    river: River | None = None
    census: int = 2020
    mayor: Person | None = None
    mayor_since: int = 0
    landmarks: list[str] = field(default_factory=list)
    twin: City | None = None
    is_capital: bool = False


@dataclass(eq=False)
class Person:
    first: str
    last: str
    born: dt.date
    birthplace: City
    occupation: str
    died: dt.date | None = None
    university: University | None = None
    subject: str = ""
    facts: list[tuple[int, str]] = field(default_factory=list)  # (year, sentence) in the person's biography
    awards: list[tuple[str, int]] = field(default_factory=list)

    @property
    def name(self) -> str:
        return f"{self.first} {self.last}"


@dataclass(eq=False)
class University:
    name: str
    city: City
    founded: int
    kind: str
    students: int
    founder: Person | None = None
    rector: Person | None = None
    alumni: list[Person] = field(default_factory=list)


@dataclass(eq=False)
class Company:
    name: str
    industry: str
    founded: int
    hq: City
    employees: int
    founders: list[Person] = field(default_factory=list)
    ceo: Person | None = None
    ceo_since: dt.date | None = None
    previous_ceo: Person | None = None
    products: list[Product] = field(default_factory=list)
    acquired_by: tuple[Company, dt.date, int] | None = None
    acquisitions: list[tuple[Company, dt.date, int]] = field(default_factory=list)


@dataclass(eq=False)
class Product:
    name: str
    kind: str
    maker: Company
    released: int
    designer: Person
    price: int
    feature: str


@dataclass(eq=False)
class Club:
    name: str
    sport: str
    city: City
    founded: int
    stadium: str
    capacity: int
    star: Person | None = None
    cup_wins: list[int] = field(default_factory=list)


@dataclass(eq=False)
class Final:
    cup: str
    country: Country
    year: int
    date: dt.date
    winner: Club
    loser: Club
    score: tuple[int, int]
    venue: Club
    scorer: Person


@dataclass(eq=False)
class Festival:
    name: str
    kind: str
    city: City
    founded: int
    founder: Person
    month: str
    visitors: int


@dataclass(eq=False)
class Treaty:
    name: str
    city: City
    date: dt.date
    countries: list[Country]
    purpose: str
    topic: str
    negotiators: list[Person]


@dataclass(eq=False)
class Flood:
    name: str
    city: City
    river: River
    date: dt.date
    deaths: int
    displaced: int


@dataclass
class Doc:
    key: str
    title: str
    category: str
    date: dt.date
    text: str
    doc_id: str = ""


def fmt_date(day: dt.date) -> str:
    return f"{day.day} {MONTHS[day.month - 1]} {day.year}"


def fmt_list(items: list[str]) -> str:
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]


def a(word: str) -> str:
    """``word`` with its indefinite article."""
    return f"{'an' if word[0].lower() in 'aeiou' else 'a'} {word}"


def ordinal(n: int) -> str:
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def normalize(text: str) -> str:
    """Same rule as servers/search/tasks.py: used here to check each answer is in its evidence."""
    text = unicodedata.normalize("NFKD", text.casefold())
    text = "".join(ch for ch in text if not unicodedata.combining(ch))
    text = re.sub(r"(?<=\d)[,.](?=\d{3}\b)", "", text)
    text = re.sub(r"[^\w\s]|_", " ", text)
    text = re.sub(r"\b(a|an|the)\b", " ", text)
    return " ".join(text.split())


class World:
    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.used: set[str] = set()
        self.countries: list[Country] = []
        self.ranges: list[Range] = []
        self.mountains: list[Mountain] = []
        self.rivers: list[River] = []
        self.cities: list[City] = []
        self.people: list[Person] = []
        self.universities: list[University] = []
        self.companies: list[Company] = []
        self.products: list[Product] = []
        self.clubs: list[Club] = []
        self.finals: list[Final] = []
        self.festivals: list[Festival] = []
        self.treaties: list[Treaty] = []
        self.floods: list[Flood] = []
        self.news: list[Doc] = []
        self.people_names: set[str] = set()

    # names ------------------------------------------------------------------------------

    def word(self, endings: list[str]) -> str:
        """A new pronounceable place-like name: a stem, sometimes a linking vowel, an ending."""
        while True:
            stem = self.rng.choice(STEMS)
            link = self.rng.choice(["", "", "", "a", "e", "i", "o", "en", "er"])
            ending = self.rng.choice(endings)
            if stem[-1] in "aeiouy" and link:
                link = ""
            name = (stem + link + ending).capitalize()
            name = re.sub(r"([^aeiou])\1([^aeiou])", r"\1\2", name)
            name = re.sub(r"([aeiou])\1", r"\1", name)
            if re.search(r"[^aeiouy]{3}", name.lower()) or not 4 <= len(name) <= 11 or name in self.used:
                continue
            self.used.add(name)
            return name

    def person(
        self, occupation: str, born: tuple[int, int], birthplace: City | None = None, *, alive_until: int = 0
    ) -> Person:
        """A new person with a unique name, born in a city that existed then, alive in ``alive_until``."""
        rng = self.rng
        while True:
            first, last = rng.choice(FIRST_NAMES), rng.choice(SURNAMES)
            if f"{first} {last}" not in self.people_names:
                break
        self.people_names.add(f"{first} {last}")
        year = rng.randint(*born)
        birthday = dt.date(year, rng.randint(1, 12), rng.randint(1, 28))
        place = birthplace if birthplace is not None and birthplace.founded < year else None
        if place is None:
            place = rng.choice([c for c in self.cities if c.founded < year])
        died = None
        if year < 1935 or (year < 1950 and rng.random() < 0.3):
            died_year = max(year + rng.randint(58, 96), alive_until + rng.randint(1, 12))
            died = dt.date(min(2023, died_year), rng.randint(1, 12), rng.randint(1, 28))
        p = Person(first, last, birthday, place, occupation, died)
        candidates = [u for u in self.universities if u.founded <= year + 17]
        if (candidates and occupation not in ("footballer", "mountaineer")) or (candidates and rng.random() < 0.4):
            local = [u for u in candidates if u.city.country is place.country]
            p.university = rng.choice(local if local and rng.random() < 0.7 else candidates)
            p.subject = rng.choice(SUBJECTS)
            p.university.alumni.append(p)
        self.people.append(p)
        return p

    # building ---------------------------------------------------------------------------

    def build(self) -> None:
        rng = self.rng
        for name, adjective, currency, language, where in COUNTRIES:
            self.countries.append(
                Country(name, adjective, currency, language, where, independence=rng.randint(1520, 1962))
            )
            self.used.add(name)
        for country in self.countries:
            for _ in range(2):
                self.ranges.append(Range(f"{self.word(['', 'ran', 'dor', 'ik'])} Range", country))
        for i in range(25):
            rng_range = self.ranges[i % len(self.ranges)]
            base = self.word(["horn", "berg", "tor", "spire", "", "a", "en"])
            name = (
                f"Mount {base}"
                if i % 3 == 0
                else (base if base.endswith(("horn", "berg", "spire")) else f"{base} Peak")
            )
            self.mountains.append(Mountain(name, rng_range, rng.randint(1400, 6900), rng.randint(1852, 1978)))
        for i in range(26):
            source = self.mountains[i % len(self.mountains)]
            home = source.range.country
            others = [c for c in self.countries if c is not home]
            countries = [home, *rng.sample(others, rng.choice([0, 0, 1, 2]))]
            river = River(
                f"{self.word(['a', 'in', 'o', 'e', 'ra', 'ska', 'wen'])} River",
                countries,
                rng.randint(60, 1450),
                source,
                rng.choice(SEAS),
            )
            self.rivers.append(river)
            source.rivers.append(river)
        endings = words(
            "mora stad holm wick haven dell brook ford mere gate burg ia ara enn vik ton ley port dal grad ovo ica "
            "ette ane by sund"
        )
        for i in range(150):
            country = self.countries[i % len(self.countries)]
            city = City(
                self.word(endings),
                country,
                population=0,
                founded=rng.randint(780, 1890),
                origin=rng.choice(CITY_ORIGINS),
                elevation=rng.randint(2, 1400),
                industries=rng.sample(CITY_INDUSTRIES, 2),
                census=rng.choice([2018, 2020, 2021, 2022]),
            )
            rivers = [r for r in self.rivers if country in r.countries]
            if rivers and rng.random() < 0.7:
                city.river = rng.choice(rivers)
                city.river.cities.append(city)
            country.cities.append(city)
            self.cities.append(city)
        for country in self.countries:
            sizes = sorted(
                (int(rng.lognormvariate(11.2, 1.0)) // 100 * 100 + 3000 for _ in country.cities), reverse=True
            )
            sizes[0] = max(sizes[0], rng.randint(650, 3200) * 1000 + rng.randint(1, 9) * 100)
            for city, size in zip(country.cities, sizes, strict=True):
                city.population = size
            country.capital = country.cities[0]
            country.capital.is_capital = True
            country.population = sum(sizes) * rng.randint(3, 6) // 1000 * 1000
            country.area = rng.randint(18, 640) * 1000
        for city in self.cities:
            others = [c for c in self.cities if c.country is not city.country and c.twin is None]
            if city.twin is None and rng.random() < 0.3:
                twin = rng.choice(others)
                city.twin, twin.twin = twin, city
        self._universities()
        self._mountaineers()
        self._companies()
        self._politics()
        self._clubs()
        self._culture()
        self._landmarks()
        self._extra_people()

    def _universities(self) -> None:
        rng = self.rng
        cities = rng.sample(self.cities, 40)
        for i, city in enumerate(cities):
            founded = rng.randint(max(1820 if i % 4 == 0 else 1180, city.founded + 50), 1985)
            if i % 4 == 0:
                kind, name = "institute of technology", None
            elif i % 4 == 1:
                kind, name = "polytechnic", f"{city.name} Polytechnic"
            else:
                kind, name = "public research university", f"University of {city.name}"
            uni = University(name or "", city, founded, kind, rng.randint(3, 61) * 1000)
            self.universities.append(uni)
        for uni in self.universities:  # people need universities, founders need people
            if uni.kind == "institute of technology":
                uni.founder = self.person(
                    "engineer", (uni.founded - 60, uni.founded - 30), uni.city, alive_until=uni.founded
                )
                uni.name = f"{uni.founder.last} Institute of Technology"
                if uni.name in self.used:
                    uni.name = f"{uni.founder.first} {uni.founder.last} Institute of Technology"
                self.used.add(uni.name)
                uni.founder.facts.append(
                    (uni.founded, f"In {uni.founded} {uni.founder.last} founded the {uni.name} in {uni.city.name}.")
                )
            uni.rector = self.person(
                rng.choice(["physicist", "historian", "chemist", "economist"]), (1950, 1975), alive_until=2024
            )
            uni.rector.facts.append((2015, f"{uni.rector.last} is the rector of the {uni.name}."))

    def _mountaineers(self) -> None:
        rng = self.rng
        for m in self.mountains:
            m.climbers = [
                self.person("mountaineer", (m.first_ascent - 40, m.first_ascent - 19), alive_until=m.first_ascent)
                for _ in range(rng.choice([1, 1, 2]))
            ]
            for c in m.climbers:
                partner = [o.name for o in m.climbers if o is not c]
                with_ = f" with {partner[0]}" if partner else ""
                c.facts.append(
                    (m.first_ascent, f"In {m.first_ascent} {c.last} made the first ascent of {m.name}{with_}.")
                )

    def _companies(self) -> None:
        rng = self.rng
        industries = list(INDUSTRIES)
        names: set[str] = set()
        prefixes = COMPANY_PREFIXES * 3
        rng.shuffle(prefixes)
        for prefix in prefixes:
            if len(self.companies) >= 160:
                break
            industry = rng.choice(industries)
            name = f"{prefix} {rng.choice(INDUSTRIES[industry][0])}"
            if name in names:
                continue
            names.add(name)
            founded = rng.randint(1848, 2016) if industry not in ("software", "games") else rng.randint(1972, 2016)
            hq = rng.choice([c for c in self.cities if c.founded < founded])
            company = Company(name, industry, founded, hq, rng.randint(1, 900) * 50 + rng.randint(0, 49))
            for _ in range(rng.choice([1, 1, 2])):
                founder = self.person(
                    rng.choice(["entrepreneur", "engineer", "inventor"]),
                    (founded - 45, founded - 23),
                    hq,
                    alive_until=founded,
                )
                company.founders.append(founder)
            for f in company.founders:
                partner = [o.name for o in company.founders if o is not f]
                with_ = f" with {partner[0]}" if partner else ""
                f.facts.append((founded, f"In {founded} {f.last} founded {name}{with_} in {hq.name}."))
            self.used.add(name)
            self.companies.append(company)
            kinds = INDUSTRIES[industry][1]
            for _ in range(rng.choice([0, 1, 1, 2]) if kinds else 0):
                released = (
                    rng.randint(founded + 1, 2024) if rng.random() < 0.5 else rng.randint(max(founded + 1, 2015), 2024)
                )
                model = f"{rng.choice(MODEL_WORDS)}{rng.choice(['', ' 2', ' 3', ' 5', ' 7', ' X', ' S', '-4', ' 900'])}"
                if model in self.used:
                    continue
                self.used.add(model)
                designer = self.person(
                    rng.choice(["engineer", "inventor", "designer"]),
                    (released - 60, released - 26),
                    alive_until=released,
                )
                kind = rng.choice(kinds)
                product = Product(
                    model,
                    kind,
                    company,
                    released,
                    designer,
                    rng.randint(2, 400) * 50 - 1,
                    rng.choice(
                        [
                            "weighed less than any rival of its day",
                            "was the first of its kind built entirely in the country",
                            "sold more than a million units in its first decade",
                            "won a design award for its simple controls",
                            "was praised for its reliability in cold weather",
                            "was criticised at launch for its high price",
                        ]
                    ),
                )
                designer.facts.append(
                    (released, f"{designer.last} designed the {model}, a {kind} released by {name} in {released}.")
                )
                company.products.append(product)
                self.products.append(product)
        for company in self.companies:
            year = rng.randint(max(company.founded + 2, 2008), 2024)
            company.previous_ceo = self.person("business executive", (1938, 1965), alive_until=year)
            company.ceo = self.person("business executive", (1955, 1986), alive_until=2024)
            company.ceo_since = dt.date(year, rng.randint(1, 12), rng.randint(1, 28))
            company.previous_ceo.facts.append(
                (year, f"{company.previous_ceo.last} led {company.name} as chief executive until {year}.")
            )
            company.ceo.facts.append((year, f"In {year} {company.ceo.last} became chief executive of {company.name}."))
        # acquisitions: buyers are older and never themselves acquired
        targets = rng.sample(self.companies, 34)
        for target in targets:
            buyers = [
                c
                for c in self.companies
                if c is not target and c.acquired_by is None and c not in targets and c.founded < 2012
            ]
            buyer = rng.choice([b for b in buyers if b.industry == target.industry] or buyers)
            year = rng.randint(max(target.founded + 3, buyer.founded + 3, 2015), 2024)
            day = dt.date(year, rng.randint(1, 12), rng.randint(1, 28))
            price = rng.randint(12, 2400) * 5
            target.acquired_by = (buyer, day, price)
            buyer.acquisitions.append((target, day, price))

    def _politics(self) -> None:
        rng = self.rng
        for country in self.countries:
            country.head_since = rng.randint(2014, 2023)
            country.head = self.person("politician", (1948, 1975), alive_until=2024)
            country.head.facts.append(
                (country.head_since, f"{country.head.last} became President of {country.name} in {country.head_since}.")
            )
        for city in self.cities:
            if city.is_capital or rng.random() < 0.55:
                city.mayor = self.person("politician", (1952, 1988), city if rng.random() < 0.7 else None)
                city.mayor_since = rng.randint(2012, 2024)
                city.mayor.facts.append(
                    (city.mayor_since, f"{city.mayor.last} was elected mayor of {city.name} in {city.mayor_since}.")
                )
        for i in range(15):
            countries = rng.sample(self.countries, rng.choice([2, 2, 3]))
            cities = [c for c in self.cities if c.country in countries]
            city = rng.choice(cities)
            name = f"Treaty of {city.name}"
            if name in self.used:
                continue
            self.used.add(name)
            year = rng.randint(1780, 2012)
            rivers = [r for r in self.rivers if set(countries) & set(r.countries)] or self.rivers
            template, topic = TREATY_PURPOSES[i % len(TREATY_PURPOSES)]
            purpose = template.format(
                river=rng.choice(rivers).name,
                sea=rng.choice(SEAS),
                range=rng.choice([r.name for r in self.ranges if r.country in countries] or ["Corran Range"]),
            )
            negotiators = [
                self.person("diplomat", (year - 65, year - 35), rng.choice(c.cities), alive_until=year)
                for c in countries
            ]
            for n in negotiators:
                n.facts.append((year, f"{n.last} negotiated the {name}, signed in {year}."))
            self.treaties.append(
                Treaty(
                    name,
                    city,
                    dt.date(year, rng.randint(1, 12), rng.randint(1, 28)),
                    countries,
                    purpose,
                    topic,
                    negotiators,
                )
            )
        for river in self.rivers:
            if river.cities and rng.random() < 0.5:
                city = rng.choice(river.cities)
                year = rng.randint(max(1700, city.founded + 20), 2021)
                name = f"Great {city.name} Flood of {year}"
                self.floods.append(
                    Flood(
                        name,
                        city,
                        river,
                        dt.date(year, rng.randint(1, 12), rng.randint(1, 28)),
                        rng.randint(3, 900),
                        rng.randint(5, 400) * 100,
                    )
                )

    def _clubs(self) -> None:
        rng = self.rng
        for country in self.countries[:4] + self.countries[6:8]:
            cup = f"{country.adjective} Cup"
            clubs: list[Club] = []
            for city in rng.sample(country.cities[:10], 7):
                name = f"{city.name} {rng.choice(CLUB_SUFFIXES)}"
                self.used.add(name)
                founded = rng.randint(max(1860, city.founded), 1975)
                stadium = rng.choice(
                    [
                        f"{rng.choice(SURNAMES)} Park",
                        f"{city.name} Arena",
                        f"the {rng.choice(['Old', 'New', 'North', 'Riverside'])} {rng.choice(['Ground', 'Stadium'])}",
                    ]
                )
                club = Club(name, "football", city, founded, stadium, rng.randint(40, 680) * 100)
                club.star = self.person("footballer", (1990, 2001))
                club.star.facts.append((2016, f"{club.star.last} plays for {name} as a forward."))
                clubs.append(club)
                self.clubs.append(club)
            for year in range(2016, 2024):
                winner, loser = rng.sample(clubs, 2)
                venue = rng.choice(clubs)
                goals = rng.randint(1, 4)
                score = (goals, rng.randint(0, goals - 1))
                date = dt.date(year, 5, rng.randint(10, 31))
                assert winner.star is not None
                final = Final(cup, country, year, date, winner, loser, score, venue, winner.star)
                winner.cup_wins.append(year)
                self.finals.append(final)

    def _culture(self) -> None:
        rng = self.rng
        for city in rng.sample(self.cities, 26):
            kind = rng.choice(FESTIVAL_KINDS)
            name = f"{city.name} {kind} Festival"
            founded = rng.randint(max(1890, city.founded + 10), 2012)
            founder = self.person(
                rng.choice(["musician", "writer", "painter", "film director"]),
                (founded - 55, founded - 25),
                alive_until=founded,
            )
            founder.facts.append((founded, f"In {founded} {founder.last} founded the {name}."))
            self.festivals.append(
                Festival(name, kind, city, founded, founder, rng.choice(MONTHS), rng.randint(30, 900) * 100)
            )

    def _landmarks(self) -> None:
        rng = self.rng
        for city in self.cities:
            options = [
                f"the {rng.choice(SURNAMES)} Museum of Art",
                f"St. {rng.choice(FIRST_NAMES)}'s Cathedral",
                f"the {city.name} Opera House",
                f"the Old {rng.choice(['Mint', 'Customs House', 'Granary', 'Town Hall', 'Observatory'])}",
                f"the {rng.choice(['Iron', 'Stone', 'Crown', 'King', 'Queen'])} Bridge",
                f"the {rng.choice(['Botanical', 'Palace', 'Harbour', 'Hill'])} Gardens",
            ]
            city.landmarks = rng.sample(options, 2)

    def _extra_people(self) -> None:
        rng = self.rng
        for _ in range(80):
            year = rng.randint(1860, 1992)
            start = min(2024, year + rng.randint(24, 40))
            occupation = rng.choice(["writer", "painter", "composer", "physicist", "chemist", "architect"])
            p = self.person(occupation, (year, year), alive_until=start)
            if p.occupation == "writer":
                first = rng.choice(["Salt", "Winter", "Glass", "Lantern", "River", "Amber", "Iron"])
                title = (
                    f"The {first} {rng.choice(['Orchard', 'Harbour', 'Letters', 'Crown', 'Road', 'Garden', 'House'])}"
                )
                p.facts.append((start, f"{p.last}'s best-known novel, {title}, was published in {start}."))
            elif p.occupation == "architect":
                city = rng.choice(self.cities)
                p.facts.append((start, f"{p.last} designed {rng.choice(city.landmarks)} in {city.name}."))
            elif p.occupation in ("physicist", "chemist"):
                p.facts.append((start, f"In {start} {p.last} described {rng.choice(DISCOVERIES)}."))
            else:
                p.facts.append(
                    (start, f"{p.last}'s first exhibition or premiere took place in {p.birthplace.name} in {start}.")
                )
        for p in rng.sample(self.people, 70):
            year = min(2024, p.born.year + rng.randint(35, 70))
            if p.died is None or year <= p.died.year:
                p.awards.append((rng.choice(AWARDS), year))


# --------------------------------------------------------------------------
# Rendering
# --------------------------------------------------------------------------


class Renderer:
    def __init__(self, world: World, rng: random.Random) -> None:
        self.w = world
        self.rng = rng
        self.docs: list[Doc] = []
        self.by_key: dict[str, Doc] = {}

    def revised(self) -> dt.date:
        return dt.date(2024, 1, 1) - dt.timedelta(days=self.rng.randint(0, 365 * 6))

    def add(self, key: str, title: str, category: str, paragraphs: list[str], date: dt.date | None = None) -> Doc:
        text = "\n\n".join(p for p in paragraphs if p)
        if date is None:  # an article is revised after the last year it mentions
            date = self.revised()
            latest = max((int(y) for y in re.findall(r"\b(1[0-9]{3}|20[0-2][0-9])\b", text)), default=0)
            if latest >= date.year:
                date = dt.date(min(latest + 1, 2024), self.rng.randint(1, 12), self.rng.randint(1, 28))
                date = max(date, dt.date(2024, 12, 20)) if latest >= 2024 else date
        doc = Doc(key, title, category, date, text)
        assert key not in self.by_key, key
        self.by_key[key] = doc
        self.docs.append(doc)
        return doc

    def pick(self, *options: str) -> str:
        return self.rng.choice(options)

    def render(self) -> None:
        for country in self.w.countries:
            self.country(country)
        for city in self.w.cities:
            self.city(city)
        for river in self.w.rivers:
            self.river(river)
        for mountain in self.w.mountains:
            self.mountain(mountain)
        for uni in self.w.universities:
            self.university(uni)
        for company in self.w.companies:
            self.company(company)
        for product in self.w.products:
            self.product(product)
        for club in self.w.clubs:
            self.club(club)
        for final in self.w.finals:
            self.final(final)
        for festival in self.w.festivals:
            self.festival(festival)
        for treaty in self.w.treaties:
            self.treaty(treaty)
        for flood in self.w.floods:
            self.flood(flood)
        for person in self.w.people:
            self.person(person)
        self.newsroom()

    # encyclopedia ----------------------------------------------------------------------

    def country(self, c: Country) -> None:
        assert c.capital is not None and c.head is not None
        largest = sorted(c.cities, key=lambda x: -x.population)[1:5]
        rivers = [r.name for r in self.w.rivers if c in r.countries]
        ranges = [r.name for r in self.w.ranges if r.country is c]
        companies = [x.name for x in self.w.companies if x.hq.country is c][:6]
        self.add(
            f"country:{c.name}",
            c.name,
            "place",
            [
                f"{c.name} is a country {c.where}. Its capital and largest city is {c.capital.name}, home to "
                f"{c.capital.population:,} people. {c.name} has an area of about {c.area:,} square kilometres and a "
                f"population of roughly {c.population:,}. The official language is {c.language} and the currency "
                f"is the {c.currency}.",
                f"{c.name} became an independent state in {c.independence}. "
                + self.pick(
                    "Its early decades were marked by disputes with its neighbours over river crossings and pastures.",
                    "A written constitution followed within a generation, and a parliament sits in the capital.",
                    "The new state was poor and thinly settled, and many of its people emigrated across the sea.",
                )
                + f" The head of state is President {c.head.name}, in office since {c.head_since}.",
                f"Other large cities include {fmt_list([f'{x.name} ({x.population:,})' for x in largest])}."
                + (f" The main rivers are the {fmt_list(rivers)}." if rivers else "")
                + (f" The {fmt_list(ranges)} cross the country." if ranges else ""),
                (f"Companies headquartered in {c.name} include {fmt_list(companies)}." if companies else "")
                + " "
                + self.pick(
                    "The economy rests on agriculture, light industry and a growing service sector.",
                    "Exports are dominated by machinery, timber and processed food.",
                    "Tourism, shipping and finance account for most of the national income.",
                ),
            ],
        )

    def city(self, c: City) -> None:
        rng = self.rng
        rank = sorted(c.country.cities, key=lambda x: -x.population).index(c) + 1
        intro = f"{c.name} is a city in {c.country.name}"
        intro += f", on the banks of the {c.river.name}" if c.river else ""
        intro += (
            f". It is the capital of {c.country.name} and its largest city."
            if c.is_capital
            else f". It is the {ordinal(rank)} largest city of the country."
        )
        history = f"{c.name} was founded in {c.founded} as {c.origin}. " + self.pick(
            f"It received a town charter {rng.randint(20, 200)} years later and grew rapidly when the railway arrived.",
            "Its old walls were pulled down in the nineteenth century to make room for wide avenues.",
            "A great fire destroyed much of the medieval centre, which was rebuilt in stone.",
            "For centuries it was a quiet market town before industry transformed it.",
        )
        people = (
            f"At the {c.census} census {c.name} had a population of {c.population:,}. The city lies at an elevation "
            f"of {c.elevation} metres."
        )
        if c.mayor is not None:
            people += f" The mayor of {c.name} is {c.mayor.name}, elected in {c.mayor_since}."
        companies = [x.name for x in self.w.companies if x.hq is c]
        unis = [u.name for u in self.w.universities if u.city is c]
        economy = f"The local economy is based on {c.industries[0]} and {c.industries[1]}."
        if companies:
            economy += (
                f" {fmt_list(companies)} {'has its' if len(companies) == 1 else 'have their'} headquarters in the city."
            )
        if unis:
            economy += f" The city is home to the {fmt_list(unis)}."
        culture = f"Notable sights include {fmt_list(c.landmarks)}."
        clubs = [x.name for x in self.w.clubs if x.city is c]
        if clubs:
            culture += f" The football club {clubs[0]} plays in the city."
        festivals = [f.name for f in self.w.festivals if f.city is c]
        if festivals:
            culture += f" Every year the city hosts the {festivals[0]}."
        if c.twin is not None:
            culture += f" {c.name} is twinned with {c.twin.name} in {c.twin.country.name}."
        natives = [p.name for p in self.w.people if p.birthplace is c][:5]
        if natives:
            culture += f" People born in {c.name} include {fmt_list(natives)}."
        self.add(f"city:{c.name}", c.name, "place", [intro, history, people, economy, culture])

    def river(self, r: River) -> None:
        where = fmt_list([c.name for c in r.countries])
        self.add(
            f"river:{r.name}",
            r.name,
            "place",
            [
                f"The {r.name} is a river in {where}. It rises on the slopes of {r.source.name} in the "
                f"{r.source.range.name} and flows for {r.length:,} kilometres before emptying into the {r.mouth}.",
                (f"Cities on the {r.name} include {fmt_list([c.name for c in r.cities[:6]])}. " if r.cities else "")
                + self.pick(
                    "Barges carried timber and grain down the river until the railways took over the trade.",
                    "The river is known for its salmon and for the steep gorges of its upper course.",
                    "Dams built in the twentieth century supply much of the region's electricity.",
                    "Its wide delta is a protected wetland and a resting place for migrating birds.",
                ),
            ],
        )

    def mountain(self, m: Mountain) -> None:
        climbers = fmt_list([c.name for c in m.climbers])
        text = [
            f"{m.name} is a mountain in the {m.range.name} of {m.range.country.name}. Its summit stands at "
            f"{m.height:,} metres above sea level.",
            f"The first recorded ascent of {m.name} was made in {m.first_ascent} by {climbers}. "
            + self.pick(
                "The climbers followed the long southern ridge and spent two nights on the mountain.",
                "They reached the summit in a storm and barely found their way back down.",
                "Earlier attempts had failed on the icefall below the summit.",
            ),
        ]
        if m.rivers:
            text.append(f"The {fmt_list([r.name for r in m.rivers])} rises on its slopes.")
        self.add(f"mountain:{m.name}", m.name, "place", text)

    def university(self, u: University) -> None:
        assert u.rector is not None
        founded = f"It was founded in {u.founded}" + (f" by the engineer {u.founder.name}" if u.founder else "") + "."
        alumni = [a.name for a in u.alumni if a is not u.rector][:5]
        self.add(
            f"university:{u.name}",
            u.name,
            "organization",
            [
                f"The {u.name} is {a(u.kind)} in {u.city.name}, {u.city.country.name}. {founded} "
                f"It has about {u.students:,} students.",
                f"The current rector is {u.rector.name}. "
                + self.pick(
                    "The university is known for its engineering and medical faculties.",
                    "Its library holds one of the largest collections of manuscripts in the region.",
                    "Teaching is organised in small colleges around a central quadrangle.",
                    "The campus moved to the edge of the city in the 1970s.",
                ),
                f"Notable alumni include {fmt_list(alumni)}." if alumni else "",
            ],
        )

    def company(self, c: Company) -> None:
        assert c.ceo is not None and c.previous_ceo is not None and c.ceo_since is not None
        founders = fmt_list([f.name for f in c.founders])
        text = [
            f"{c.name} is {a(c.hq.country.adjective)} {INDUSTRY_NOUN.get(c.industry, c.industry)} company "
            f"headquartered in {c.hq.name}. "
            f"It was founded in {c.founded} by {founders}.",
            f"{c.ceo.name} has been chief executive since {c.ceo_since.year}, succeeding {c.previous_ceo.name}. "
            f"The company employs about {c.employees:,} people.",
        ]
        if c.products:
            text.append(
                "Its products include " + fmt_list([f"the {p.name} {p.kind} ({p.released})" for p in c.products]) + "."
            )
        if c.acquired_by is not None:
            buyer, day, price = c.acquired_by
            text.append(f"In {day.year} {c.name} was acquired by {buyer.name} for {price:,} million.")
        for target, day, price in c.acquisitions:
            text.append(f"In {day.year} the company bought {target.name} for {price:,} million.")
        if self.rng.random() < 0.4:
            plant = self.rng.choice([x for x in self.w.cities if x is not c.hq])
            text.append(f"Its largest factory is in {plant.name}, {plant.country.name}.")
        text.append(
            self.pick(
                f"{c.name} began as a small workshop and grew through a series of mergers.",
                "The company is listed on the national stock exchange.",
                "Much of its production was moved abroad in the early 2000s.",
                "It remains family-controlled, although its shares are publicly traded.",
                "The company has faced criticism over working conditions at its factories.",
            )
        )
        self.add(f"company:{c.name}", c.name, "organization", text)

    def product(self, p: Product) -> None:
        self.add(
            f"product:{p.name}",
            p.name,
            "product",
            [
                f"The {p.name} is {a(p.kind)} made by {p.maker.name}. It was designed by {p.designer.name} and "
                f"released in {p.released} at a price of {p.price:,} crowns.",
                f"The {p.name} {p.feature}. "
                + self.pick(
                    "Reviewers compared it favourably with the products of larger rivals.",
                    "A revised version followed a few years later.",
                    "It remained in production for more than a decade.",
                    "Early units suffered from faults that were fixed in later batches.",
                ),
            ],
        )

    def club(self, c: Club) -> None:
        times = {1: "once", 2: "twice"}.get(len(c.cup_wins), f"{len(c.cup_wins)} times")
        wins = (
            f"It has won the {self.cup_of(c)} {times} since 2016, most recently in {c.cup_wins[-1]}."
            if c.cup_wins
            else f"It has never won the {self.cup_of(c)}."
        )
        star = f" Its best-known player is the forward {c.star.name}." if c.star else ""
        self.add(
            f"club:{c.name}",
            c.name,
            "organization",
            [
                f"{c.name} is a professional football club based in {c.city.name}, {c.city.country.name}. "
                f"Founded in {c.founded}, the club plays its home matches at {c.stadium}, which holds "
                f"{c.capacity:,} spectators.",
                wins + star,
            ],
        )

    def cup_of(self, c: Club) -> str:
        return f"{c.city.country.adjective} Cup"

    def final(self, f: Final) -> None:
        a, b = f.score
        self.add(
            f"final:{f.cup}:{f.year}",
            f"{f.year} {f.cup} Final",
            "event",
            [
                f"The {f.year} {f.cup} Final was the deciding match of the {f.year} edition of the {f.cup}, the "
                f"main football cup competition of {f.country.name}. It was played on {fmt_date(f.date)} at "
                f"{f.venue.stadium} in {f.venue.city.name}.",
                f"{f.winner.name} defeated {f.loser.name} {a}\u2013{b} to win the cup. {f.scorer.name} scored "
                f"{'the winning goal' if a - b == 1 else 'twice'}. "
                + self.pick(
                    "The match was played in heavy rain in front of a full stadium.",
                    "Both teams had finished in the top half of the league that season.",
                    "The losing side had a goal disallowed late in the second half.",
                ),
            ],
            date=f.date,
        )

    def festival(self, f: Festival) -> None:
        self.add(
            f"festival:{f.name}",
            f.name,
            "event",
            [
                f"The {f.name} is an annual {f.kind.lower()} festival held every {f.month} in {f.city.name}, "
                f"{f.city.country.name}. It was first held in {f.founded}, founded by the {f.founder.occupation} "
                f"{f.founder.name}.",
                f"The festival now attracts about {f.visitors:,} visitors a year. "
                + self.pick(
                    "Events take place in squares, churches and warehouses across the old town.",
                    "Most events are free, paid for by the city and by local companies.",
                    "A prize for young artists is awarded on the final night.",
                ),
            ],
        )

    def treaty(self, t: Treaty) -> None:
        self.add(
            f"treaty:{t.name}",
            t.name,
            "event",
            [
                f"The {t.name} is {a(t.topic)} treaty signed on {fmt_date(t.date)} in {t.city.name} by "
                f"{fmt_list([c.name for c in t.countries])}. It {t.purpose}.",
                f"The treaty was negotiated by {fmt_list([n.name for n in t.negotiators])}. "
                + self.pick(
                    "It remains in force, although parts of it have been amended.",
                    "It was replaced by a broader agreement a century later.",
                    "Historians regard it as a model for later regional agreements.",
                ),
            ],
        )

    def flood(self, f: Flood) -> None:
        self.add(
            f"flood:{f.name}",
            f.name,
            "event",
            [
                f"The {f.name} was a flood of the {f.river.name} that struck {f.city.name}, {f.city.country.name}, "
                f"on {fmt_date(f.date)}.",
                f"After weeks of rain the river burst its banks. {f.deaths:,} people were killed and about "
                f"{f.displaced:,} were forced from their homes. "
                + self.pick(
                    "New embankments were built in the years that followed.",
                    "The disaster led to the creation of a national flood warning service.",
                    "Marks on the walls of the old town still show the height of the water.",
                ),
            ],
        )

    def person(self, p: Person) -> None:
        nationality = p.birthplace.country.adjective
        life = f"born {fmt_date(p.born)}" + (f", died {fmt_date(p.died)}" if p.died else "")
        verb = "was" if p.died else "is"
        text = [f"{p.name} ({life}) {verb} {a(nationality)} {p.occupation}."]
        early = f"{p.last} was born in {p.birthplace.name}, {p.birthplace.country.name}."
        if p.university is not None:
            early += f" {p.last} studied {p.subject} at the {p.university.name}."
        text.append(early)
        facts = [sentence for _, sentence in sorted(p.facts, key=lambda f: f[0])]
        career = " ".join([*facts, self.career(p)])
        text.append(career)
        if p.awards:
            text.append(" ".join(f"{p.last} received the {a} in {y}." for a, y in p.awards))
        home = self.rng.choice(self.w.cities)
        if p.died is not None:
            text.append(f"{p.last} died in {home.name} on {fmt_date(p.died)}.")
        elif self.rng.random() < 0.5:
            text.append(f"{p.last} lives in {home.name}.")
        self.add(f"person:{p.name}", p.name, "person", text)

    def career(self, p: Person) -> str:
        """One sentence of background, in the vocabulary the person's occupation shares with others."""
        rng, last = self.rng, p.last
        other = rng.choice(self.w.companies)
        city = rng.choice(self.w.cities)
        options = {
            "business executive": [
                f"Before that {last} spent {rng.randint(4, 19)} years at {other.name}.",
                f"{last} began as an accountant in {city.name} and rose through finance roles.",
                f"{last} also sits on the board of {other.name}.",
            ],
            "politician": [
                f"{last} is a member of the {rng.choice(PARTIES)}.",
                f"Before entering politics {last} worked as a teacher in {city.name}.",
                f"{last} served on the city council for {rng.randint(3, 14)} years.",
            ],
            "engineer": [
                f"{last} held {rng.randint(3, 60)} patents.",
                f"{last} worked for several years in the design office of {other.name}.",
            ],
            "inventor": [
                f"{last} held {rng.randint(3, 60)} patents, most of them for improvements to machinery.",
                f"{last}'s workshop in {city.name} is now a small museum.",
            ],
            "footballer": [
                f"{last} came through the youth academy of a club in {city.name}.",
                f"{last} has played {rng.randint(3, 60)} matches for the national team.",
            ],
            "mountaineer": [
                f"{last} also led expeditions to the glaciers of the {rng.choice(SEAS)} coast.",
                f"{last} wrote a popular account of climbing in the {rng.choice(self.w.ranges).name}.",
            ],
            "diplomat": [
                f"{last} served as ambassador in {city.name}.",
                f"{last} spent most of a long career in the foreign service.",
            ],
        }
        generic = [
            f"{last} spent several years in {city.name} early in life.",
            f"{last}'s papers are kept in the archive of {city.name}.",
            f"{last} later taught at a school in {city.name}.",
        ]
        return rng.choice(options.get(p.occupation, generic))

    # news ------------------------------------------------------------------------------

    def news(self, key: str, title: str, day: dt.date, city: City, paragraphs: list[str]) -> None:
        paragraphs = [f"{city.name.upper()}, {fmt_date(day)} — {paragraphs[0]}", *paragraphs[1:]]
        self.add(key, title, "news", paragraphs, date=day)

    def newsroom(self) -> None:
        rng = self.rng
        for c in self.w.companies:
            if c.acquired_by is not None:
                buyer, day, price = c.acquired_by
                self.news(
                    f"news:acquisition:{c.name}",
                    f"{buyer.name} to buy {c.name} for {price:,} million",
                    day,
                    buyer.hq,
                    [
                        f"{buyer.name} has agreed to acquire {c.name}, the "
                        f"{INDUSTRY_NOUN.get(c.industry, c.industry)} company based in {c.hq.name}, "
                        f"for {price:,} million crowns, the two companies said on {MONTHS[day.month - 1]} {day.day}.",
                        f'"{c.name} brings us skills and customers we could not build ourselves," said '
                        f"{buyer.ceo.name if buyer.ceo else 'the chief executive'}. Analysts said the price was "
                        + self.pick("generous.", "in line with recent deals.", "a bargain.")
                        + " The deal still needs the approval of the competition authority.",
                    ],
                )
        for c in self.w.companies:
            assert c.ceo is not None and c.previous_ceo is not None and c.ceo_since is not None
            if c.ceo_since.year >= 2015:
                self.news(
                    f"news:ceo:{c.name}",
                    f"{c.name} names {c.ceo.name} chief executive",
                    c.ceo_since,
                    c.hq,
                    [
                        f"{c.name} has appointed {c.ceo.name} as chief executive, succeeding {c.previous_ceo.name}, "
                        "the company said in a statement.",
                        f"{c.ceo.last}, who was born in {c.ceo.birthplace.name}, "
                        + self.pick(
                            "previously ran the company's overseas business.",
                            "joins from a rival firm.",
                            "has been at the company for more than twenty years.",
                        )
                        + f" {c.name} employs about {c.employees:,} people.",
                    ],
                )
        for p in self.w.products:
            if p.released >= 2015:
                day = dt.date(p.released, rng.randint(1, 12), rng.randint(1, 28))
                self.news(
                    f"news:launch:{p.name}",
                    f"{p.maker.name} unveils the {p.name}",
                    day,
                    p.maker.hq,
                    [
                        f"{p.maker.name} on Tuesday presented the {p.name}, a new {p.kind} designed by "
                        f"{p.designer.name}. It will sell for {p.price:,} crowns.",
                        "The company hopes the product will win back customers from "
                        + self.pick("foreign competitors.", "cheaper imports.", "younger rivals.")
                        + f" Shares of {p.maker.name} rose on the news.",
                    ],
                )
        for city in self.w.cities:
            if city.mayor is not None and city.mayor_since >= 2015 and rng.random() < 0.5:
                day = dt.date(city.mayor_since, rng.choice([3, 5, 9, 10, 11]), rng.randint(1, 28))
                share = rng.randint(41, 68)
                rival = rng.choice(self.w.people)
                self.news(
                    f"news:election:{city.name}",
                    f"{city.mayor.name} wins mayoral election in {city.name}",
                    day,
                    city,
                    [
                        f"{city.mayor.name} has been elected mayor of {city.name} with {share} percent of the vote, "
                        "according to official results published on Monday.",
                        f"The runner-up, {rival.name}, conceded defeat late on election night. Turnout was "
                        f"{rng.randint(38, 77)} percent. "
                        + self.pick(
                            "Housing and public transport dominated the campaign.",
                            "The new mayor has promised to rebuild the harbour district.",
                            "The result ends a long period of coalition government in the city.",
                        ),
                    ],
                )
        for f in self.w.finals:
            a, b = f.score
            self.news(
                f"news:final:{f.cup}:{f.year}",
                f"{f.winner.name} beat {f.loser.name} to lift the {f.cup}",
                f.date,
                f.venue.city,
                [
                    f"{f.winner.name} won the {f.cup} for the {ordinal(f.winner.cup_wins.index(f.year) + 1)} time "
                    f"after beating {f.loser.name} {a}\u2013{b} in the final at {f.venue.stadium}.",
                    f"{f.scorer.name} was the hero for the winners. "
                    + self.pick(
                        "The losing coach blamed the referee.",
                        "Thousands of fans celebrated in the streets until dawn.",
                        "It was the first final between the two clubs.",
                    ),
                ],
            )
        for f in self.w.festivals:
            if rng.random() < 0.7:
                year = rng.randint(max(2015, f.founded + 1), 2024)
                day = dt.date(year, MONTHS.index(f.month) + 1, rng.randint(1, 28))
                self.news(
                    f"news:festival:{f.name}",
                    f"{f.name} opens with record crowds",
                    day,
                    f.city,
                    [
                        f"The {f.name} opened this week, {year - f.founded} years after it was first held. "
                        f"Organisers expect about {f.visitors:,} visitors.",
                        self.pick(
                            "Hotels in the city reported that they were fully booked.",
                            "Rain on the opening night did not keep the crowds away.",
                            "This year's programme includes artists from eleven countries.",
                        ),
                    ],
                )
        for i, uni in enumerate(self.w.universities):
            lead = rng.choice([a for a in uni.alumni] or [uni.rector]) if uni.rector else None
            if lead is None or lead.died is not None or lead.born.year > 1995:
                continue
            day = dt.date(rng.randint(2015, 2024), rng.randint(1, 12), rng.randint(1, 28))
            finding = DISCOVERIES[i % len(DISCOVERIES)]
            self.news(
                f"news:science:{uni.name}",
                f"Researchers at {uni.name} report {finding.split(' that ')[0].split(' for ')[0]}",
                day,
                uni.city,
                [
                    f"A team at the {uni.name} led by {lead.name} has reported {finding}, in a study published "
                    "this week.",
                    self.pick(
                        "Other scientists called the result promising but said it must be repeated.",
                        "The work took six years and was funded by a national research council.",
                        "The team now hopes to test the idea outside the laboratory.",
                    ),
                ],
            )
        for flood in self.w.floods:
            if flood.date.year >= 2015:
                self.news(
                    f"news:flood:{flood.name}",
                    f"{flood.river.name} bursts its banks in {flood.city.name}",
                    flood.date,
                    flood.city,
                    [
                        f"The {flood.river.name} flooded large parts of {flood.city.name} overnight. At least "
                        f"{flood.deaths:,} people were killed and about {flood.displaced:,} have left their homes.",
                        "Rescue teams used boats to reach people trapped on rooftops.",
                    ],
                )
        # market reports: much shared vocabulary, few facts
        for _ in range(60):
            country = rng.choice(self.w.countries)
            day = dt.date(rng.randint(2015, 2024), rng.randint(1, 12), rng.randint(1, 28))
            companies = rng.sample([c for c in self.w.companies if c.hq.country is country] or self.w.companies, 2)
            key = f"news:market:{country.name}:{day.isoformat()}"
            if key in self.by_key:
                continue
            assert country.capital is not None
            self.news(
                key,
                f"{country.adjective} shares {self.pick('rise', 'fall', 'steady')} as "
                f"{self.pick('exporters rally', 'banks weigh', 'energy prices climb', 'investors await the budget')}",
                day,
                country.capital,
                [
                    f"Shares in {country.name} closed {self.pick('higher', 'lower', 'mixed')} on "
                    f"{self.pick('Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday')}, led by "
                    f"{companies[0].name} and {companies[1].name}.",
                    f"The {country.currency} was {self.pick('weaker', 'stronger', 'little changed')} against its "
                    "neighbours' currencies. Traders said they were waiting for the central bank's decision on "
                    "interest rates and for new figures on exports.",
                ],
            )


# --------------------------------------------------------------------------
# Tasks
# --------------------------------------------------------------------------


def year_answers(year: int) -> list[str]:
    return [str(year), f"in {year}"]


def number_answers(value: int, unit: str = "") -> list[str]:
    forms = [f"{value:,}", str(value)]
    if unit:
        forms += [f"{value:,} {unit}", f"{value} {unit}"]
    return forms


class TaskMaker:
    def __init__(self, world: World, renderer: Renderer, rng: random.Random) -> None:
        self.w = world
        self.r = renderer
        self.rng = rng
        self.tasks: list[dict[str, object]] = []

    def add(self, kind: str, question: str, answers: list[str], hops: list[tuple[str, str]]) -> None:
        docs = [self.r.by_key[key] for _, key in hops]
        assert any(normalize(answers[0]) in normalize(d.text) for d in docs), (question, answers[0])
        self.tasks.append(
            {
                "kind": kind,
                "question": question,
                "answers": answers,
                "evidence": [d.doc_id for d in docs],
                "hops": [{"query": q, "doc_id": d.doc_id} for (q, _), d in zip(hops, docs, strict=True)],
            }
        )

    def choose(self, items: list[object]) -> object:
        return self.rng.choice(items)

    def make(self) -> list[dict[str, object]]:
        rng, w = self.rng, self.w
        prefix_counts: dict[str, int] = {}
        for c in w.companies:
            prefix_counts[c.name.split()[0]] = prefix_counts.get(c.name.split()[0], 0) + 1
        shared = [c for c in w.companies if prefix_counts[c.name.split()[0]] >= 2]
        for c in rng.sample(shared, 3):
            self.add(
                "company-founded",
                f"In what year was {c.name} founded?",
                year_answers(c.founded),
                [(f"{c.name} founded", f"company:{c.name}")],
            )
        for c in rng.sample(shared, 2):
            self.add(
                "company-hq",
                f"In which city is {c.name} headquartered?",
                [c.hq.name, f"{c.hq.name}, {c.hq.country.name}"],
                [(f"{c.name} headquarters", f"company:{c.name}")],
            )
        solo = [c for c in shared if len(c.founders) == 1]
        c = rng.choice(solo)
        self.add(
            "company-founder",
            f"Who founded {c.name}?",
            [c.founders[0].name],
            [(f"{c.name} founder", f"company:{c.name}")],
        )
        for p in rng.sample(w.products, 2):
            self.add(
                "product-designer",
                f"Who designed the {p.name} {p.kind}?",
                [p.designer.name],
                [(f"{p.name} {p.kind} designed", f"product:{p.name}")],
            )
        for city in rng.sample([c for c in w.cities if not c.is_capital], 2):
            self.add(
                "city-population",
                f"What was the population of {city.name} at its most recent census?",
                number_answers(city.population, "people"),
                [(f"{city.name} population", f"city:{city.name}")],
            )
        city = rng.choice([c for c in w.cities if c.river is not None])
        assert city.river is not None
        self.add(
            "city-river",
            f"On which river does the city of {city.name} lie?",
            [city.river.name, city.river.name.removesuffix(" River")],
            [(f"{city.name} river", f"city:{city.name}")],
        )
        city = rng.choice([c for c in w.cities if c.mayor is not None and not c.is_capital])
        assert city.mayor is not None
        self.add(
            "city-mayor",
            f"Who is the mayor of {city.name}?",
            [city.mayor.name],
            [(f"mayor of {city.name}", f"city:{city.name}")],
        )
        country = rng.choice(w.countries)
        assert country.capital is not None
        self.add(
            "country-capital",
            f"What is the capital of {country.name}?",
            [country.capital.name],
            [(f"{country.name} capital", f"country:{country.name}")],
        )
        for p in rng.sample([p for p in w.people if p.occupation in ("writer", "painter", "composer", "architect")], 2):
            self.add(
                "person-birthplace",
                f"In which city was the {p.occupation} {p.name} born?",
                [p.birthplace.name, f"{p.birthplace.name}, {p.birthplace.country.name}"],
                [(f"{p.name} born", f"person:{p.name}")],
            )
        p = rng.choice([p for p in w.people if p.occupation in ("physicist", "chemist")])
        self.add(
            "person-born-year",
            f"In what year was the scientist {p.name} born?",
            year_answers(p.born.year),
            [(f"{p.name} {p.occupation}", f"person:{p.name}")],
        )
        u = rng.choice([u for u in w.universities if u.kind != "institute of technology"])
        self.add(
            "university-founded",
            f"In what year was the {u.name} founded?",
            year_answers(u.founded),
            [(f"{u.name} founded", f"university:{u.name}")],
        )
        u = rng.choice([u for u in w.universities if u.kind == "institute of technology"])
        assert u.founder is not None
        self.add(
            "university-founder",
            f"Which engineer founded the {u.name}?",
            [u.founder.name],
            [(f"{u.name} founder", f"university:{u.name}")],
        )
        for m in rng.sample(w.mountains, 2):
            self.add(
                "mountain-height",
                f"How high is {m.name}, in metres?",
                [*number_answers(m.height, "metres"), f"{m.height:,} m", f"{m.height} m"],
                [(f"{m.name} height metres", f"mountain:{m.name}")],
            )
        m = rng.choice([m for m in w.mountains if len(m.climbers) == 1])
        self.add(
            "mountain-first-ascent",
            f"Who made the first ascent of {m.name}?",
            [m.climbers[0].name],
            [(f"{m.name} first ascent", f"mountain:{m.name}")],
        )
        r = rng.choice(w.rivers)
        self.add(
            "river-length",
            f"How long is the {r.name}, in kilometres?",
            [*number_answers(r.length, "kilometres"), f"{r.length} km", f"{r.length:,} km"],
            [(f"{r.name} length kilometres", f"river:{r.name}")],
        )
        for f in rng.sample(w.finals, 3):
            self.add(
                "cup-winner",
                f"Which club won the {f.year} {f.cup}?",
                [f.winner.name],
                [(f"{f.year} {f.cup} final", f"final:{f.cup}:{f.year}")],
            )
        for t in rng.sample(w.treaties, 2):
            self.add(
                "treaty-year",
                f"In what year was the {t.name} signed?",
                year_answers(t.date.year),
                [(f"{t.name}", f"treaty:{t.name}")],
            )
        f = rng.choice(w.festivals)
        self.add(
            "festival-founder",
            f"Who founded the {f.name}?",
            [f.founder.name],
            [(f"{f.name} founded", f"festival:{f.name}")],
        )
        for c in rng.sample([c for c in w.companies if c.acquired_by is not None], 3):
            assert c.acquired_by is not None
            buyer, day, price = c.acquired_by
            self.add(
                "acquisition-buyer",
                f"According to a news report from {MONTHS[day.month - 1]} {day.year}, "
                f"which company agreed to buy {c.name}?",
                [buyer.name],
                [(f"{c.name} acquire", f"news:acquisition:{c.name}")],
            )
        c = rng.choice([c for c in w.companies if c.acquired_by is not None])
        assert c.acquired_by is not None
        buyer, day, price = c.acquired_by
        self.add(
            "acquisition-price",
            f"For how many million crowns did {buyer.name} agree to buy {c.name}?",
            [f"{price:,}", str(price), f"{price:,} million", f"{price:,} million crowns"],
            [(f"{buyer.name} buy {c.name}", f"news:acquisition:{c.name}")],
        )
        for c in rng.sample([c for c in w.companies if c.ceo_since and c.ceo_since.year >= 2015], 2):
            assert c.ceo is not None and c.ceo_since is not None
            self.add(
                "ceo-appointed",
                f"Who was appointed chief executive of {c.name} in {c.ceo_since.year}?",
                [c.ceo.name],
                [(f"{c.name} chief executive", f"company:{c.name}")],
            )
        # two hops
        for p in rng.sample([p for p in w.products if p.maker.acquired_by is None], 2):
            self.add(
                "product-maker-hq",
                f"In which city is the maker of the {p.name} {p.kind} headquartered?",
                [p.maker.hq.name, f"{p.maker.hq.name}, {p.maker.hq.country.name}"],
                [
                    (f"{p.name} {p.kind}", f"product:{p.name}"),
                    (f"{p.maker.name} headquarters", f"company:{p.maker.name}"),
                ],
            )
        p = rng.choice([p for p in w.people if p.occupation in ("writer", "painter", "composer") and p.university])
        assert p.university is not None
        self.add(
            "alma-mater-founded",
            f"In what year was the university where {p.name} studied founded?",
            year_answers(p.university.founded),
            [
                (f"{p.name} studied", f"person:{p.name}"),
                (f"{p.university.name} founded", f"university:{p.university.name}"),
            ],
        )
        c = rng.choice([c for c in w.companies if c.hq.river is not None and c.acquired_by is None])
        assert c.hq.river is not None
        self.add(
            "hq-river",
            f"On which river lies the city where {c.name} has its headquarters?",
            [c.hq.river.name, c.hq.river.name.removesuffix(" River")],
            [(f"{c.name} headquarters", f"company:{c.name}"), (f"{c.hq.name} river", f"city:{c.hq.name}")],
        )
        f = rng.choice(w.finals)
        self.add(
            "cup-winner-city",
            f"In which city is the club that won the {f.year} {f.cup} based?",
            [f.winner.city.name, f"{f.winner.city.name}, {f.winner.city.country.name}"],
            [
                (f"{f.year} {f.cup} final", f"final:{f.cup}:{f.year}"),
                (f"{f.winner.name} club", f"club:{f.winner.name}"),
            ],
        )

        rng.shuffle(self.tasks)
        for i, task in enumerate(self.tasks):
            task["id"] = f"search-{i + 1:03d}"
            task["split"] = "test" if i % 3 == 2 else "train"
        # a test question whose answer rests on the same article and answer as a train question is learnt in train:
        # it moves to train (the University of Nededal's founding year was asked both ways)
        train_facts = {(t["evidence"][-1], str(t["answers"][0])) for t in self.tasks if t["split"] == "train"}
        for task in self.tasks:
            if task["split"] == "test" and (task["evidence"][-1], str(task["answers"][0])) in train_facts:
                task["split"] = "train"
        order = ["id", "split", "kind", "question", "answers", "evidence", "hops"]
        return [{k: t[k] for k in order} for t in sorted(self.tasks, key=lambda t: str(t["id"]))]


def world_facts(w: World, r: Renderer) -> dict[str, list[dict[str, object]]]:
    """The world's facts that task generators ask about, each entity with the doc_id of its article.

    ``openenv_mcp.servers.search.generator`` builds its questions from these (``facts.json.gz``); every fact here
    is stated in the article named by ``doc`` (the generator's tests check each answer is in its evidence).
    """

    def doc(key: str) -> str:
        return r.by_key[key].doc_id

    def name(x: object) -> str | None:
        return None if x is None else str(x.name)

    return {
        "people": [
            {
                "name": p.name,
                "doc": doc(f"person:{p.name}"),
                "occupation": p.occupation,
                "born": p.born.year,
                "birthplace": p.birthplace.name,
                "university": name(p.university),
                "died": p.died.year if p.died else None,
            }
            for p in w.people
        ],
        "cities": [
            {
                "name": c.name,
                "doc": doc(f"city:{c.name}"),
                "country": c.country.name,
                "river": name(c.river),
                "mayor": name(c.mayor),
                "founded": c.founded,
                "population": c.population,
                "elevation": c.elevation,
            }
            for c in w.cities
        ],
        "countries": [
            {
                "name": c.name,
                "doc": doc(f"country:{c.name}"),
                "capital": name(c.capital),
                "currency": c.currency,
                "language": c.language,
                "independence": c.independence,
                "head": name(c.head),
            }
            for c in w.countries
        ],
        "rivers": [
            {
                "name": v.name,
                "doc": doc(f"river:{v.name}"),
                "length": v.length,
                "source": v.source.name,
                "mouth": v.mouth,
            }
            for v in w.rivers
        ],
        "mountains": [
            {
                "name": m.name,
                "doc": doc(f"mountain:{m.name}"),
                "height": m.height,
                "first_ascent": m.first_ascent,
                "climbers": [c.name for c in m.climbers],
            }
            for m in w.mountains
        ],
        "universities": [
            {
                "name": u.name,
                "doc": doc(f"university:{u.name}"),
                "city": u.city.name,
                "founded": u.founded,
                "founder": name(u.founder),
                "rector": name(u.rector),
            }
            for u in w.universities
        ],
        "companies": [
            {
                "name": c.name,
                "doc": doc(f"company:{c.name}"),
                "hq": c.hq.name,
                "founded": c.founded,
                "founders": [f.name for f in c.founders],
                "ceo": name(c.ceo),
                "ceo_since": c.ceo_since.year if c.ceo_since else None,
                "employees": c.employees,
            }
            for c in w.companies
        ],
        "products": [
            {
                "name": p.name,
                "kind": p.kind,
                "doc": doc(f"product:{p.name}"),
                "maker": p.maker.name,
                "designer": p.designer.name,
                "released": p.released,
                "price": p.price,
            }
            for p in w.products
        ],
        "clubs": [
            {
                "name": c.name,
                "doc": doc(f"club:{c.name}"),
                "city": c.city.name,
                "founded": c.founded,
                "stadium": c.stadium,
                "capacity": c.capacity,
            }
            for c in w.clubs
        ],
        "finals": [
            {
                "cup": f.cup,
                "year": f.year,
                "doc": doc(f"final:{f.cup}:{f.year}"),
                "winner": f.winner.name,
                "loser": f.loser.name,
                "scorer": f.scorer.name,
            }
            for f in w.finals
        ],
        "festivals": [
            {
                "name": f.name,
                "doc": doc(f"festival:{f.name}"),
                "city": f.city.name,
                "founded": f.founded,
                "founder": f.founder.name,
                "month": f.month,
            }
            for f in w.festivals
        ],
        "treaties": [
            {"name": t.name, "doc": doc(f"treaty:{t.name}"), "city": t.city.name, "year": t.date.year}
            for t in w.treaties
        ],
        "floods": [
            {
                "name": f.name,
                "doc": doc(f"flood:{f.name}"),
                "river": f.river.name,
                "city": f.city.name,
                "year": f.date.year,
                "deaths": f.deaths,
            }
            for f in w.floods
        ],
    }


def main() -> None:
    rng = random.Random(SEED)
    world = World(rng)
    world.build()
    renderer = Renderer(world, rng)
    renderer.render()
    docs = renderer.docs
    rng.shuffle(docs)
    for i, doc in enumerate(docs):
        doc.doc_id = f"doc-{i + 1:04d}"
    titles = [d.title for d in docs if d.category != "news"]
    assert len(set(titles)) == len(titles), [t for t in titles if titles.count(t) > 1][:5]
    tasks = TaskMaker(world, renderer, rng).make()
    lines = [
        json.dumps(
            {"doc_id": d.doc_id, "title": d.title, "category": d.category, "date": d.date.isoformat(), "text": d.text},
            ensure_ascii=False,
            separators=(",", ":"),
        )
        for d in sorted(docs, key=lambda d: d.doc_id)
    ]
    raw = ("\n".join(lines) + "\n").encode("utf-8")
    with (
        CORPUS_PATH.open("wb") as out,
        gzip.GzipFile(filename="", mode="wb", fileobj=out, mtime=0, compresslevel=9) as gz,
    ):
        gz.write(raw)
    TASKS_PATH.write_text(json.dumps(tasks, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    facts = json.dumps(world_facts(world, renderer), ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    with (
        FACTS_PATH.open("wb") as out,
        gzip.GzipFile(filename="", mode="wb", fileobj=out, mtime=0, compresslevel=9) as gz,
    ):
        gz.write(facts)
    counts: dict[str, int] = {}
    for d in docs:
        counts[d.category] = counts.get(d.category, 0) + 1
    print(f"{len(docs)} documents ({len(raw):,} bytes, {CORPUS_PATH.stat().st_size:,} gzipped): {counts}")
    splits = {s: sum(1 for t in tasks if t["split"] == s) for s in ("train", "test")}
    print(f"{len(tasks)} tasks: {splits}")


if __name__ == "__main__":
    main()
