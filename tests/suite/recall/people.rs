//! Long generated conversations between two people (issue 36), in the
//! manner of multi-session chat benchmarks: dated sessions of small talk,
//! incidental details that look like facts, and facts each speaker states
//! about their own life (relatives' and pets' names, dates, places,
//! numbers, jobs, plans, preferences, decisions and their reasons), some of
//! them later replaced ("we're moving to Porto instead"). Each fact comes
//! with a question whose answer is a short exact string; the answer counts
//! as kept when a compressed thread still says it.
//!
//! The speakers are the two roles (user and assistant). Deterministic (a
//! fixed-seed generator) so that summarizers can be compared.

use serde_json::{Value, json};

use super::conversation::Rng;

/// A question about the conversation: its exact answer, and the messages
/// that say it (the statement and any echo of it).
#[derive(Debug, Clone)]
pub struct Question {
    pub answer: String,
    pub evidence: Vec<usize>,
    /// Whether it asks for a value that replaced an earlier one.
    pub updated: bool,
}

/// A conversation in OpenAI chat form and its questions: only those whose
/// answer no other message says (a chance mention would count as kept).
pub struct People {
    pub messages: Vec<Value>,
    pub questions: Vec<Question>,
}

const SPEAKERS: [(&str, &str); 4] = [
    ("Maya", "Jon"),
    ("Caroline", "Melanie"),
    ("Dev", "Priscilla"),
    ("Amara", "Lukas"),
];
const NAMES: [&str; 70] = [
    "Elena",
    "Tobias",
    "Marisol",
    "Kenji",
    "Anika",
    "Rohan",
    "Beatrix",
    "Callum",
    "Delphine",
    "Emeka",
    "Freya",
    "Gideon",
    "Hana",
    "Ivo",
    "Jolene",
    "Kasimir",
    "Leonie",
    "Mateo",
    "Noor",
    "Orla",
    "Pavel",
    "Rosalind",
    "Silas",
    "Talia",
    "Umberto",
    "Vesna",
    "Wendell",
    "Ximena",
    "Yusuf",
    "Zara",
    "Cosima",
    "Dorian",
    "Esther",
    "Florian",
    "Greta",
    "Jasper",
    "Katya",
    "Lucian",
    "Odette",
    "Soren",
    "Bettina",
    "Cassius",
    "Dagny",
    "Evander",
    "Fenella",
    "Giacomo",
    "Henrike",
    "Idris",
    "Jovana",
    "Kwame",
    "Lavinia",
    "Malachi",
    "Nerissa",
    "Osvaldo",
    "Philippa",
    "Quentin",
    "Rasmus",
    "Seraphina",
    "Thaddeus",
    "Ulrike",
    "Valentin",
    "Wilhelmina",
    "Yolanda",
    "Zebedee",
    "Agnieszka",
    "Bartosz",
    "Cordelia",
    "Desmond",
    "Eulalia",
    "Fabian",
];
const RELATIONS: [&str; 10] = [
    "sister",
    "brother",
    "cousin",
    "best friend",
    "niece",
    "nephew",
    "neighbour",
    "boss",
    "roommate",
    "grandmother",
];
const RELATION_NEWS: [&str; 8] = [
    "just got engaged",
    "started a new job last week",
    "is coming to stay with us for a while",
    "finally finished her degree",
    "broke his ankle skiing",
    "adopted a rescue cat",
    "ran her first half marathon",
    "is learning to play the cello",
];
const PETS: [&str; 24] = [
    "Biscuit",
    "Pickles",
    "Waffles",
    "Juniper",
    "Noodle",
    "Mochi",
    "Ziggy",
    "Clementine",
    "Bramble",
    "Toffee",
    "Nutmeg",
    "Pumpernickel",
    "Marzipan",
    "Gizmo",
    "Truffle",
    "Pistachio",
    "Sprocket",
    "Dumpling",
    "Crumpet",
    "Hazelnut",
    "Wasabi",
    "Figaro",
    "Bonbon",
    "Snickerdoodle",
];
const ANIMALS: [&str; 5] = ["puppy", "kitten", "rabbit", "parrot", "tortoise"];
const CITIES: [&str; 36] = [
    "Lisbon",
    "Porto",
    "Valencia",
    "Krakow",
    "Ljubljana",
    "Tallinn",
    "Seville",
    "Bologna",
    "Ghent",
    "Bergen",
    "Gdansk",
    "Nantes",
    "Utrecht",
    "Graz",
    "Zagreb",
    "Aarhus",
    "Lyon",
    "Cork",
    "Bruges",
    "Tampere",
    "Salzburg",
    "Riga",
    "Vilnius",
    "Bilbao",
    "Trieste",
    "Malmo",
    "Leipzig",
    "Girona",
    "Bratislava",
    "Plovdiv",
    "Innsbruck",
    "Groningen",
    "Coimbra",
    "Dubrovnik",
    "Turku",
    "Brno",
];
const TRIPS: [&str; 24] = [
    "Kyoto",
    "Oaxaca",
    "Patagonia",
    "the Azores",
    "Hokkaido",
    "Tasmania",
    "Sardinia",
    "the Dolomites",
    "Marrakesh",
    "Cape Breton",
    "Zanzibar",
    "the Faroe Islands",
    "Yucatan",
    "Lofoten",
    "Kerala",
    "Hoi An",
    "Cappadocia",
    "Madeira",
    "Iceland's Westfjords",
    "the Scottish Highlands",
    "Puglia",
    "Crete",
    "Bhutan",
    "Okinawa",
];
const COMPANIES: [&str; 20] = [
    "Northwind",
    "Brightpath",
    "Lumen Labs",
    "Oakridge Health",
    "Copperleaf",
    "Bluefin Logistics",
    "Halcyon Media",
    "Tidewater Bank",
    "Ironbark Studio",
    "Meridian Foods",
    "Sparrow Analytics",
    "Keystone Schools",
    "Foxglove Design",
    "Granite Peak Energy",
    "Harbourline Ferries",
    "Juniper Grove Clinic",
    "Kestrel Robotics",
    "Lantern Books",
    "Mosaic Theatre",
    "Nimbus Airlines",
];
const JOBS: [&str; 10] = [
    "nurse",
    "architect",
    "sous-chef",
    "librarian",
    "data analyst",
    "physiotherapist",
    "carpenter",
    "translator",
    "paramedic",
    "bookkeeper",
];
const HOBBIES: [&str; 24] = [
    "pottery",
    "bouldering",
    "salsa dancing",
    "beekeeping",
    "watercolour painting",
    "woodworking",
    "birdwatching",
    "archery",
    "sourdough baking",
    "calligraphy",
    "kayaking",
    "fencing",
    "knitting",
    "rowing",
    "stand-up comedy",
    "origami",
    "trail running",
    "ice skating",
    "glassblowing",
    "choir singing",
    "tap dancing",
    "mushroom foraging",
    "kickboxing",
    "embroidery",
];
const WEEKDAYS: [&str; 7] = [
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
    "Sunday",
];
const FOODS: [&str; 20] = [
    "ramen",
    "shakshuka",
    "pierogi",
    "paella",
    "banh mi",
    "jollof rice",
    "moussaka",
    "bibimbap",
    "tiramisu",
    "dim sum",
    "katsu curry",
    "gnocchi",
    "falafel",
    "borscht",
    "ceviche",
    "baklava",
    "laksa",
    "risotto",
    "empanadas",
    "khachapuri",
];
const BOOKS: [&str; 16] = [
    "The Overstory",
    "Piranesi",
    "Circe",
    "Middlemarch",
    "Kindred",
    "The Remains of the Day",
    "Pachinko",
    "Station Eleven",
    "Moby-Dick",
    "Beloved",
    "Rebecca",
    "Dune",
    "Persuasion",
    "Gilead",
    "Watership Down",
    "Wolf Hall",
];
const EVENTS: [&str; 8] = [
    "my sister's wedding",
    "the half marathon",
    "my knee surgery",
    "our housewarming party",
    "my pottery exhibition",
    "my thesis defence",
    "the adoption hearing",
    "my driving test",
];
const DECISIONS: [&str; 8] = [
    "sell my car",
    "go back to school",
    "switch to part-time",
    "give up my flat",
    "turn down the promotion",
    "stop coaching the team",
    "move in with my partner",
    "take a year off",
];
const REASONS: [&str; 18] = [
    "the long commute",
    "the night shifts",
    "a better salary",
    "more time with the kids",
    "the noise from the bar downstairs",
    "a cheaper rent",
    "the mould in the flat",
    "a chance to work remotely",
    "my back problems",
    "the rising insurance costs",
    "my mother's health",
    "the endless meetings",
    "a new baby on the way",
    "the awful landlord",
    "burnout last winter",
    "the student loans",
    "the hour-long school run",
    "a knee injury",
];
const MONTHS: [&str; 12] = [
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
];
const OPENERS: [&str; 16] = [
    "Haha, totally.",
    "Oh wow!",
    "That's so cool.",
    "Aw, that's sweet.",
    "I know what you mean.",
    "Same here, honestly.",
    "Sounds like a busy week!",
    "Thanks for asking.",
    "That must have been hard.",
    "I'm so happy for you!",
    "Ugh, Mondays.",
    "Ha, fair enough.",
    "Oh no, sorry to hear that.",
    "That's wild.",
    "Right? It's been a lot.",
    "Love that.",
];
const CLOSERS: [&str; 10] = [
    "How have you been?",
    "What about you?",
    "Anything fun planned?",
    "How's everything on your end?",
    "What do you think?",
    "Have you ever tried that?",
    "How was your weekend?",
    "Tell me everything!",
    "Are you doing okay?",
    "Let's catch up again soon.",
];
/// Details with the shape of facts that nobody asks about.
const DECOYS: [&str; 20] = [
    "It has been raining here for {n} days straight.",
    "Traffic took me {n} minutes this morning.",
    "We had {n} people at the book club on Thursday.",
    "I watched a documentary about Antarctica last night.",
    "The bakery on Elm Street closed, which is sad.",
    "My phone battery died at {n} percent again.",
    "The new cafe near the station does a great flat white.",
    "I finally cleaned out the garage, it took all of Saturday.",
    "There was a concert in the park with maybe {n} people.",
    "I've been trying to drink more water, around {n} glasses a day.",
    "The heating bill was {n} euros this month, ouch.",
    "My playlist is up to {n} songs now.",
    "My mom called again, nothing new really.",
    "I love this weather, honestly.",
    "We should plan something fun soon.",
    "My friend from work says hi.",
    "I was thinking about moving the couch, but meh.",
    "I decided not to watch the news for a while.",
    "Next week looks busy because of the deadline.",
    "My neighbour's dog barked all night.",
];

/// One planted fact: the statement, the exact answer, and whether it
/// replaced an earlier value.
struct Planted {
    text: String,
    answer: String,
    updated: bool,
}

/// What one speaker has said about themselves, for updates.
#[derive(Default)]
struct Life {
    city: Option<String>,
    company: Option<String>,
}

/// One of `xs` other than `old`.
fn other(r: &mut Rng, xs: &[&str], old: &str) -> String {
    loop {
        let x = r.pick(xs);
        if x != old {
            return x.to_string();
        }
    }
}

fn date(r: &mut Rng) -> String {
    format!("{} {}", r.pick(&MONTHS), 1 + r.below(28))
}

/// A fact about `life`'s owner, in their own words.
fn fact(r: &mut Rng, life: &mut Life) -> Planted {
    let plain = |text: String, answer: String| Planted {
        text,
        answer,
        updated: false,
    };
    match r.below(14) {
        0 | 1 => {
            let name = r.pick(&NAMES).to_string();
            plain(
                format!(
                    "My {} {name} {}.",
                    r.pick(&RELATIONS),
                    r.pick(&RELATION_NEWS)
                ),
                name,
            )
        }
        2 => {
            let pet = r.pick(&PETS).to_string();
            plain(
                format!("We adopted a {} and named it {pet}!", r.pick(&ANIMALS)),
                pet,
            )
        }
        3 => match life.city.take() {
            Some(old) => {
                let city = other(r, &CITIES, &old);
                life.city = Some(city.clone());
                Planted {
                    text: format!(
                        "Change of plans: we're leaving {old} and moving to {city} next month."
                    ),
                    answer: city,
                    updated: true,
                }
            }
            None => {
                let city = r.pick(&CITIES).to_string();
                life.city = Some(city.clone());
                plain(format!("We just moved into a flat in {city}."), city)
            }
        },
        4 => match life.company.take() {
            Some(old) => {
                let company = other(r, &COMPANIES, &old);
                life.company = Some(company.clone());
                Planted {
                    text: format!("I left {old}, I start at {company} on Monday."),
                    answer: company,
                    updated: true,
                }
            }
            None => {
                let company = r.pick(&COMPANIES).to_string();
                life.company = Some(company.clone());
                plain(
                    format!("I work as a {} at {company} these days.", r.pick(&JOBS)),
                    company,
                )
            }
        },
        5 => {
            let d = date(r);
            let event = r.pick(&EVENTS);
            let text = format!(
                "{}{} is on {d}, fingers crossed.",
                event[..1].to_uppercase(),
                &event[1..]
            );
            plain(text, d)
        }
        6 => {
            let n = format!("{} km", 12 + r.below(180));
            plain(format!("I ran {n} last week, a personal best."), n)
        }
        7 => {
            let n = format!("{} guests", 40 + r.below(160));
            plain(format!("We're expecting {n} at the party."), n)
        }
        8 => {
            let hobby = r.pick(&HOBBIES).to_string();
            plain(
                format!("I've started {hobby} classes on {}s.", r.pick(&WEEKDAYS)),
                hobby,
            )
        }
        9 => {
            let food = r.pick(&FOODS).to_string();
            plain(format!("Honestly my favourite food is {food}."), food)
        }
        10 => {
            let book = r.pick(&BOOKS).to_string();
            plain(
                format!("I'm rereading {book}, it's my favourite book."),
                book,
            )
        }
        11 => {
            let reason = r.pick(&REASONS).to_string();
            plain(
                format!("I decided to {} because of {reason}.", r.pick(&DECISIONS)),
                reason,
            )
        }
        12 => {
            let trip = r.pick(&TRIPS).to_string();
            plain(
                format!(
                    "We're planning a trip to {trip} in {} for {} days.",
                    r.pick(&MONTHS),
                    5 + r.below(20)
                ),
                trip,
            )
        }
        _ => {
            let n = format!("{} years", 2 + r.below(30));
            plain(format!("Can you believe we've been married {n} now?"), n)
        }
    }
}

/// A conversation of `sessions` dated sessions; `seed` varies everything.
pub fn people(sessions: usize, seed: u64) -> People {
    let mut r = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
    let (a, b) = SPEAKERS[seed as usize % SPEAKERS.len()];
    let mut lives = [Life::default(), Life::default()];
    let mut messages = Vec::new();
    let mut planted: Vec<(Planted, Vec<usize>)> = Vec::new();
    // The previous message's fact, which the other side may echo.
    let mut last: Option<usize> = None;
    let (mut day, mut year) = (1 + r.below(20), 2022);
    let mut month = r.below(12);
    for session in 0..sessions {
        let turns = 20 + 2 * r.below(8);
        for t in 0..turns {
            let side = t % 2;
            let mut parts: Vec<String> = Vec::new();
            if t == 0 {
                parts.push(format!(
                    "[Session {}, {}:{:02} pm on {day} {}, {year}] Hey {b}!",
                    session + 1,
                    1 + r.below(9),
                    r.below(60),
                    MONTHS[month]
                ));
            } else if t == 1 {
                parts.push(format!("Hi {a}!"));
            } else if r.chance(60) {
                parts.push(r.pick(&OPENERS).to_string());
            }
            if let Some(i) = last.take()
                && r.chance(30)
            {
                let answer = planted[i].0.answer.clone();
                parts.push(format!("Wait, {answer}? Tell me more about that."));
                planted[i].1.push(messages.len());
            }
            let roll = r.below(100);
            if roll < 33 {
                let p = fact(&mut r, &mut lives[side]);
                parts.push(p.text.clone());
                last = Some(planted.len());
                planted.push((p, vec![messages.len()]));
            } else if roll < 68 {
                let n = (3 + r.below(97)).to_string();
                parts.push(r.pick(&DECOYS).replace("{n}", &n));
            }
            if parts.is_empty() || r.chance(40) {
                parts.push(r.pick(&CLOSERS).to_string());
            }
            let role = if side == 0 { "user" } else { "assistant" };
            messages.push(json!({"role": role, "content": parts.join(" ")}));
        }
        day += 3 + r.below(25);
        if day > 28 {
            day -= 28;
            month += 1;
            if month == 12 {
                month = 0;
                year += 1;
            }
        }
    }
    let texts: Vec<&str> = messages
        .iter()
        .map(|m| m["content"].as_str().unwrap())
        .collect();
    let questions = planted
        .into_iter()
        .filter(|(p, evidence)| {
            (0..texts.len()).all(|i| !texts[i].contains(p.answer.as_str()) || evidence.contains(&i))
        })
        .map(|(p, evidence)| Question {
            answer: p.answer,
            evidence,
            updated: p.updated,
        })
        .collect();
    People {
        messages,
        questions,
    }
}
